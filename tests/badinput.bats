#!/usr/bin/env bats
# Every reading tool against every kind of bad input: one clear line (or a
# truncation warning), exit 1, never a crash.  Under `make SANITIZE=...`
# this is also a memory-safety test.
load helpers

setup() {
	T=$BATS_TEST_TMPDIR
	good=$VEC/valid/multi-frame.ist
	size=$(stat -c %s "$good")
	i=0
	# ten cut points and ten bit flips over the good trace
	for k in 1 2 3 4 5 6 7 8 9 10; do
		head -c $((size * k / 11)) "$good" > "$T/cut$k.ist"
		python3 -c '
import sys
d = bytearray(open(sys.argv[1], "rb").read())
d[int(sys.argv[2]) * len(d) // 11] ^= 1 << (int(sys.argv[2]) % 8)
open(sys.argv[3], "wb").write(d)' "$good" "$k" "$T/flip$k.ist"
	done
	cp "$VEC"/invalid/*.ist "$T/"
	printf '{"type":"scope"}\n' > "$T/a.json"
}

check_tool() {
	local n=0
	for f in "$T"/*.ist "$T/a.json"; do
		run --separate-stderr "$@" "$f"
		[ "$status" -le 1 ] || fail "$* $f: exit $status"
		[ "${#stderr_lines[@]}" -le 2 ] ||
		    fail "$* $f: ${#stderr_lines[@]} lines on stderr"
		for l in "${stderr_lines[@]}"; do
			[[ $l == "${1##*/}: "* ]] || fail "$* $f: stray stderr: $l"
		done
		n=$((n + 1))
	done
	[ "$n" -ge 35 ]
}

@test "is-cat: every bad input" {
	check_tool is-cat
}

@test "is-info: every bad input" {
	check_tool is-info
}

@test "is-merge: every bad input" {
	check_tool is-merge -o "$T/out.ist"
}

@test "is-analyze: every bad input" {
	check_tool is-analyze -o "$T/out.ist"
	check_tool is-analyze --json
}

@test "is-report: every bad input, every format" {
	for f in md html json perfetto; do
		check_tool is-report -f $f -o "$T/out.$f"
	done
}

@test "is-cat --encode: hostile JSON Lines" {
	python3 - "$T/hostile.jsonl" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("[" * 100000 + "\n")
    f.write('{"type":"instant","pid":1,"tid":1,"name":"x","ts_ns":1,"metadata":'
            + '{"a":' * 100 + "1" + "}" * 100 + "}\n")
    f.write('{"type":"scope","pid":99999999999999999999999}\n')
    f.write("\x00\xff\xfe garbage\n")
    f.write('{"type":"scope","pid":1,"tid":1,"name":"' + "x" * 2000000 + '","start_ns":1,"end_ns":2}\n')
    f.write('{"type":"thread","pid":1,"tid":1,"name":"ok"}\n')
PY
	run -1 --separate-stderr is-cat -e -o "$T/h.ist" "$T/hostile.jsonl"
	assert_equal "${#stderr_lines[@]}" 5
	run is-cat "$T/h.ist"
	assert_line '{"type":"thread","pid":1,"tid":1,"name":"ok"}'
}

@test "a value JSON cannot say: every reader refuses it alike, naming the file and the record" {
	# is-cat stopped with "map key is not a string" (no file, no
	# record); the other tools exited 0 and is-merge copied it through
	for v in metadata-int-key metadata-bytes; do
		f=$VEC/invalid/$v.ist
		what="a map key that is not text"
		[ $v = metadata-bytes ] && what="a byte string"
		msg="cannot decode record 4 in '$f': instant record's 'metadata' holds $what, which JSON cannot"
		for tool in is-cat is-info is-analyze is-report; do
			run -1 --separate-stderr $tool "$f"
			assert_equal "$stderr" "$tool: $msg"
		done
		run -1 --separate-stderr is-merge -o "$T/m.ist" "$f"
		assert_equal "$stderr" "is-merge: $msg; merging what was read"
		# the merged trace holds none of it, and says it is damaged
		run -0 is-cat "$T/m.ist"
		refute_output --partial '"type":"instant"'
	done
	# (the writer refuses to write one: tests/unit/test_trace.c)
}
