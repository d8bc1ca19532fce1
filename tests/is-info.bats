#!/usr/bin/env bats
# is-info: the summary, exact numbers, JSON, bad and truncated inputs.
load helpers

@test "summary of the all-types vector (golden)" {
	run --separate-stderr is-info "$VEC/valid/all-types.ist"
	assert_success
	assert_equal "$stderr" ""
	golden tests/golden/is-info-all-types.txt "$output"
}

@test "exact counts in --json" {
	run is-info --json "$VEC/valid/multi-frame.ist"
	assert_success
	run python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
print(d["events"], d["counts"]["cpu_call"], d["counts"]["counter"],
      d["counts"]["scope"], d["frames"], d["segments"], d["duration_ns"],
      len(d["threads"]), d["truncated_bytes"], d["bytes"])' <<< "$output"
	# 60 calls, 6 counters, 1 scope, 2 threads; 5 frames of 951 bytes
	assert_output "69 60 6 1 5 1 76490 2 0 951"
}

@test "loss records are summed" {
	printf '%s\n' '{"type":"loss","pid":1,"events":7,"reason":"buffer full"}' \
	    '{"type":"loss","pid":2,"events":5}' | is-cat -e | is-info > "$BATS_TEST_TMPDIR/out"
	grep -qx 'loss:        2 records, 12 events lost' "$BATS_TEST_TMPDIR/out"
	grep -qx 'processes:   2' "$BATS_TEST_TMPDIR/out"
}

@test "concatenated traces: two segments, counts added" {
	run bash -c "cat $VEC/valid/multi-frame.ist $VEC/valid/multi-frame.ist | is-info --json"
	assert_success
	assert_output --partial '"segments":2,'
	assert_output --partial '"events":138,'
}

@test "a truncated trace is summarised as far as it goes, exit 1" {
	run -1 --separate-stderr is-info "$VEC/invalid/truncated.ist"
	assert_equal "$stderr" "is-info: warning: trace '$VEC/invalid/truncated.ist' is truncated: last 177 bytes dropped"
	assert_line 'truncated:   yes, last 177 bytes dropped'
	assert_line --regexp '^events: +54 in 4 frames'
}

@test "bad inputs: one line, exit 1, the next file still summarised" {
	for bad in empty random json version-2 bit-flip; do
		run -1 --separate-stderr is-info "$VEC/invalid/$bad.ist" \
		    "$VEC/valid/all-types.ist"
		assert_equal "${#stderr_lines[@]}" 1
		assert_equal "$stderr" "$(sed 's/^is-cat:/is-info:/' "$VEC/invalid/$bad.err")"
		assert_line "trace:       $VEC/valid/all-types.ist"
	done
}

@test "several files: one summary each, blank-line separated" {
	run is-info "$VEC/valid/all-types.ist" "$VEC/valid/edge-values.ist"
	assert_success
	[ "$(printf '%s\n' "$output" | grep -c '^trace:')" -eq 2 ]
	run is-info --json "$VEC/valid/all-types.ist" "$VEC/valid/edge-values.ist"
	assert_equal "${#lines[@]}" 2
}
