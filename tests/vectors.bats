#!/usr/bin/env bats
# The golden vectors of formats/vectors: valid ones decode to their JSON
# Lines; invalid ones fail with their exact message.
load helpers

@test "valid vectors decode to their .jsonl, byte for byte" {
	n=0
	for ist in "$VEC"/valid/*.ist; do
		run --separate-stderr is-cat "$ist"
		assert_success
		assert_equal "$stderr" ""
		assert_equal "$output" "$(cat "${ist%.ist}.jsonl")"
		n=$((n + 1))
	done
	[ "$n" -ge 5 ]
}

@test "encoding a valid .jsonl gives the vector byte for byte" {
	for jsonl in "$VEC"/valid/[!x]*.jsonl; do
		args=()
		case $jsonl in *multi-frame*) args=(--frame-bytes 200) ;; esac
		is-cat --encode "${args[@]}" -o "$BATS_TEST_TMPDIR/t.ist" "$jsonl"
		cmp "$BATS_TEST_TMPDIR/t.ist" "${jsonl%.jsonl}.ist"
	done
}

@test "invalid vectors: one clear line, exit 1, the golden message" {
	n=0
	for ist in "$VEC"/invalid/*.ist; do
		run -1 --separate-stderr is-cat "$ist"
		golden "${ist%.ist}.err" "$stderr"
		[ "${#stderr_lines[@]}" -eq 1 ]
		[[ "$stderr" == is-cat:* ]]
		[[ "$stderr" == *"$ist"* ]]
		n=$((n + 1))
	done
	[ "$n" -ge 15 ]
}

@test "a truncated trace keeps everything before its last frame" {
	full=$(is-cat "$VEC/valid/multi-frame.ist" | wc -l)
	run -1 --separate-stderr is-cat "$VEC/invalid/truncated.ist"
	assert_equal "$stderr" "is-cat: warning: trace '$VEC/invalid/truncated.ist' is truncated: last 177 bytes dropped"
	# the kept lines are the start of the full decoding
	assert_equal "$output" "$(is-cat "$VEC/valid/multi-frame.ist" | head -n "${#lines[@]}")"
	# 70 lines in 5 frames; the cut falls in the 5th, which held 15
	assert_equal "$full" 70
	assert_equal "${#lines[@]}" 55
}

@test "a trace cut inside its one frame keeps the records of the frame's whole blocks" {
	# 40,003 records in a single frame, cut at 60%: 0 were recovered
	/usr/bin/python3 -c '
import json, random
r = random.Random(1)
print(json.dumps({"type": "header", "format": "inferscope-trace",
                  "version": [1, 4], "producer": "t"}, separators=(",", ":")))
t = 0
for i in range(40002):
    t += r.randint(1, 100000)
    print(json.dumps({"type": "instant", "pid": 1, "tid": r.randint(1, 4),
                      "name": "n%d" % r.randint(0, 50), "ts_ns": t},
                     separators=(",", ":")))' > "$BATS_TEST_TMPDIR/s.jsonl"
	is-cat -e -o "$BATS_TEST_TMPDIR/s.ist" "$BATS_TEST_TMPDIR/s.jsonl"
	run -0 is-info --json "$BATS_TEST_TMPDIR/s.ist"
	assert_output --partial '"events":40002,'
	assert_output --partial '"frames":1,'
	size=$(stat -c %s "$BATS_TEST_TMPDIR/s.ist")
	head -c $((size * 6 / 10)) "$BATS_TEST_TMPDIR/s.ist" > "$BATS_TEST_TMPDIR/cut.ist"
	run -1 --separate-stderr is-cat "$BATS_TEST_TMPDIR/cut.ist"
	n=${#lines[@]}
	# what comes out is the start of the whole, byte for byte: a record
	# the cut split is not among it
	assert_equal "$output" "$(head -n "$n" "$BATS_TEST_TMPDIR/s.jsonl")"
	# a block is 128 KiB of CBOR at most: 60% of the bytes keep well over
	# a third of the records
	(( n > 40003 / 3 && n < 40003 * 6 / 10 )) || fail "$n lines kept"
	# the warning says how much of the frame was read and how many of
	# its records were kept (string and track definitions count)
	[[ $stderr =~ ^"is-cat: warning: trace '$BATS_TEST_TMPDIR/cut.ist' is truncated: its last frame ("$((size * 6 / 10))" bytes) is cut; its first "([0-9]+)" records are kept, the rest is lost"$ ]] ||
	    fail "$stderr"
	kept=${BASH_REMATCH[1]}
	(( kept >= n - 1 && kept <= n + 60 ))
	run -1 is-info "$BATS_TEST_TMPDIR/cut.ist"
	assert_line "truncated:   yes, its last frame ($((size * 6 / 10)) bytes) is cut, its first $kept records kept"
}
