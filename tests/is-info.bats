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

@test "names reach the terminal without their escapes; --json keeps them" {
	printf '%s\n' '{"type":"header","format":"inferscope-trace","version":[1,0],"producer":"a\u001b]0;pwn\u0007b\u009b[2J","host":"h\u001b[31m"}' \
	    '{"type":"process","pid":1,"name":"p\u001b[2J"}' \
	    '{"type":"thread","pid":1,"tid":2,"name":"t\bx\r"}' |
	    is-cat -e -o "$BATS_TEST_TMPDIR/esc.ist"
	run is-info "$BATS_TEST_TMPDIR/esc.ist"
	assert_success
	# ESC, BEL, BS, CR and the C1 CSI (U+009B) each became '?'
	assert_line 'format:      inferscope-trace 1.4, producer a?]0;pwn?b??[2J, host h?[31m'
	assert_line '  1  p?[2J'
	assert_line '  1/2  t?x?'
	refute_output --regexp $'[\x01-\x09\x0b-\x1f\x7f]'
	run is-info --json "$BATS_TEST_TMPDIR/esc.ist"
	assert_output --partial '"name":"t\bx\r"'
}

@test "200,000 threads are summarised in time linear in the records" {
	# was quadratic: 9.5 s against is-merge's 0.75 s. CPU time, in
	# one run, against is-merge reading the same file: load cannot move
	# the ratio
	/usr/bin/python3 -c '
import json
print(json.dumps({"type": "header", "format": "inferscope-trace",
                  "version": [1, 0], "producer": "t"}))
for i in range(200000):
    print(json.dumps({"type": "thread", "pid": 1 + i % 7, "tid": i,
                      "name": "t%d" % i}))' | is-cat -e -o "$BATS_TEST_TMPDIR/t.ist"
	/usr/bin/time -f %U+%S -o "$BATS_TEST_TMPDIR/info.t" \
	    is-info "$BATS_TEST_TMPDIR/t.ist" > "$BATS_TEST_TMPDIR/info"
	/usr/bin/time -f %U+%S -o "$BATS_TEST_TMPDIR/merge.t" \
	    is-merge "$BATS_TEST_TMPDIR/t.ist" > /dev/null
	grep -qx 'threads:     200000' "$BATS_TEST_TMPDIR/info"
	info=$(bc <<< "$(cat "$BATS_TEST_TMPDIR/info.t")")
	merge=$(bc <<< "$(cat "$BATS_TEST_TMPDIR/merge.t")")
	echo "is-info $info s, is-merge $merge s"
	(( $(bc <<< "$info <= 2 * $merge + 0.2") ))
}

@test "reading ahead wakes the other thread once for several chunks of records: at most one voluntary context switch per 1,024 records" {
	# the producer that finds its ring of 8 chunks (512 records each)
	# full waits for 4 to be free; the reader that finds it empty, for 4
	# to be ready: a wait, and so a switch, per 4 chunks at most (about
	# 490 on a million records, on one core or two, however loaded).
	# Woken for every chunk, it had made 3,500-3,700. Counted by the
	# kernel, not timed: load cannot move it
	"$IST_BUILD/bench/bench" -J -m realistic -n 1000000 -o "$BATS_TEST_TMPDIR/b.ist" \
	    > /dev/null
	/usr/bin/time -f %w -o "$BATS_TEST_TMPDIR/sw" \
	    is-info --json "$BATS_TEST_TMPDIR/b.ist" > "$BATS_TEST_TMPDIR/info"
	run jq -r .events "$BATS_TEST_TMPDIR/info"
	assert_output 1000000
	sw=$(cat "$BATS_TEST_TMPDIR/sw")
	echo "voluntary context switches: $sw"
	(( sw > 0 && sw <= 1000000 / 1024 ))
}

@test "make bench's libcbor floor reads the trace whole: the events is-info counts, the bytes zstd decompresses" {
	# bench -F times libcbor's streaming decoder alone over a trace's
	# records, the floor under every reader of ours: it must have gone
	# over all of them
	"$IST_BUILD/bench/bench" -J -m realistic -n 20000 \
	    -o "$BATS_TEST_TMPDIR/b.ist" > /dev/null
	run "$IST_BUILD/bench/bench" -F "$BATS_TEST_TMPDIR/b.ist"
	assert_success
	raw=$(zstd -dc "$BATS_TEST_TMPDIR/b.ist" | wc -c)
	assert_output --regexp "^libcbor's streaming decoder alone over the 20000 events \\($raw bytes decompressed\\): 9\\.1 items an event"
	run "$IST_BUILD/bench/bench" -F /dev/null
	assert_failure
}
