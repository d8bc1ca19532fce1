#!/usr/bin/env bats
# is-cat end to end: round trips, pipes, concatenation, errors, faults.
load helpers

setup() {
	T=$BATS_TEST_TMPDIR
}

@test "JSON Lines -> trace -> JSON Lines is exact" {
	for f in "$VEC"/valid/[!x]*.jsonl; do
		is-cat --encode "$f" | is-cat > "$T/out.jsonl"
		cmp "$T/out.jsonl" "$f"
	done
}

@test "trace -> JSON Lines -> trace is byte-identical" {
	is-cat "$VEC/valid/all-types.ist" | is-cat --encode > "$T/re.ist"
	cmp "$T/re.ist" "$VEC/valid/all-types.ist"
}

@test "stdin, '-' and a file give the same output" {
	a=$(is-cat < "$VEC/valid/all-types.ist")
	b=$(is-cat - < "$VEC/valid/all-types.ist")
	c=$(is-cat "$VEC/valid/all-types.ist")
	assert_equal "$a" "$c"
	assert_equal "$b" "$c"
}

@test "concatenated traces decode as both, in order" {
	cat "$VEC/valid/all-types.ist" "$VEC/valid/multi-frame.ist" |
	    is-cat > "$T/both"
	cat "$VEC/valid/all-types.jsonl" "$VEC/valid/multi-frame.jsonl" |
	    cmp - "$T/both"
	run is-cat "$VEC/valid/all-types.ist" "$VEC/valid/multi-frame.ist"
	assert_output "$(cat "$T/both")"
}

@test "a trace streams through a pipe one byte at a time" {
	# dd with bs=1 hands the reader single bytes
	dd if="$VEC/valid/multi-frame.ist" bs=1 status=none |
	    is-cat | cmp - "$VEC/valid/multi-frame.jsonl"
}

@test "JSON input without a header gets a default one" {
	printf '{"type":"thread","pid":1,"tid":2,"name":"w"}\n\n' |
	    is-cat --encode | is-cat > "$T/out"
	assert_equal "$(cat "$T/out")" '{"type":"header","format":"inferscope-trace","version":[1,4],"producer":"is-cat"}
{"type":"thread","pid":1,"tid":2,"name":"w"}'
}

@test "empty JSON input encodes to a valid empty trace" {
	is-cat --encode < /dev/null > "$T/empty.ist"
	run is-cat "$T/empty.ist"
	assert_success
	assert_output '{"type":"header","format":"inferscope-trace","version":[1,4],"producer":"is-cat"}'
}

@test "bad JSON lines: line number and reason, the rest still encoded" {
	printf '%s\n' '{"type":"thread","pid":1,"tid":1}' 'not json' \
	    '{"type":"scope","pid":1}' '{"type":"warp"}' \
	    '{"type":"thread","pid":1,"tid":2}' > "$T/in.jsonl"
	run -1 --separate-stderr is-cat --encode -o "$T/out.ist" "$T/in.jsonl"
	assert_equal "${stderr_lines[0]}" "is-cat: '$T/in.jsonl':2: invalid JSON at column 3: '[' or '{' expected near 'not'"
	assert_equal "${stderr_lines[1]}" "is-cat: '$T/in.jsonl':3: missing required field 'tid' for type 'scope'"
	assert_equal "${stderr_lines[2]}" "is-cat: '$T/in.jsonl':4: unknown type 'warp'"
	assert_equal "${#stderr_lines[@]}" 3
	run is-cat "$T/out.ist"
	assert_equal "${#lines[@]}" 3
}

@test "refuses to write a trace to a terminal" {
	run script -qec "is-cat --encode $VEC/valid/all-types.jsonl" /dev/null
	assert_failure 1
	assert_output --partial "is-cat: refusing to write binary trace data to a terminal"
}

@test "a missing file: warning, exit 1, the other files still read" {
	run -1 --separate-stderr is-cat "$T/nope.ist" "$VEC/valid/all-types.ist"
	assert_equal "$stderr" "is-cat: cannot open '$T/nope.ist': No such file or directory"
	assert_equal "$output" "$(cat "$VEC/valid/all-types.jsonl")"
}

@test "usage errors exit 2" {
	run -2 --separate-stderr is-cat --bogus
	assert_equal "${stderr_lines[0]}" "is-cat: unrecognized option '--bogus'"
	assert_equal "${stderr_lines[1]}" "usage: is-cat [--encode] [--frame-bytes n] [-o file] [file ...]"
	run -2 is-cat --encode --frame-bytes 0
}

@test "-o writes the file whole, or not at all" {
	is-cat --encode -o "$T/a.ist" "$VEC/valid/all-types.jsonl"
	cmp "$T/a.ist" "$VEC/valid/all-types.ist"
	run -1 --separate-stderr is-cat --encode -o "$T/no/such/dir/a.ist" \
	    "$VEC/valid/all-types.jsonl"
	[[ "$stderr" == "is-cat: cannot create '$T/no/such/dir/a.ist': No such file or directory" ]]
	# a decoding that fails leaves no partial file behind -o either
	run -1 is-cat -o "$T/b.jsonl" "$VEC/invalid/random.ist"
	[ -f "$T/b.jsonl" ]   # the output of zero good records is empty
	[ ! -s "$T/b.jsonl" ]
	[ -z "$(ls "$T" | grep '\.tmp\.')" ]
}

@test "a full disk is an error, not a silent loss" {
	run -1 --separate-stderr is-cat --encode "$VEC/valid/all-types.jsonl" \
	    -o /dev/full
	run -1 --separate-stderr sh -c "is-cat --encode $VEC/valid/all-types.jsonl > /dev/full"
	assert_equal "$stderr" "is-cat: cannot write standard output: No space left on device"
	run -1 --separate-stderr sh -c "is-cat $VEC/valid/all-types.ist > /dev/full"
	[[ "$stderr" == "is-cat: "*"No space left on device" ]]
	run -1 --separate-stderr is-cat -e -o /dev/full "$VEC/valid/all-types.jsonl"
	assert_equal "$stderr" "is-cat: cannot write '/dev/full': No space left on device"
}

@test "a reader that exits early: a quiet exit" {
	run --separate-stderr bash -c "is-cat $VEC/valid/multi-frame.ist | head -1"
	assert_success
	assert_equal "$stderr" ""
	assert_output '{"type":"header","format":"inferscope-trace","version":[1,4],"producer":"vectors"}'
}

@test "a record too large for any frame is refused with its line; the trace written reads whole" {
	/usr/bin/python3 -c '
import json
print(json.dumps({"type": "instant", "pid": 1, "tid": 1, "name": "a", "ts_ns": 1}))
print(json.dumps({"type": "instant", "pid": 1, "tid": 1, "name": "big", "ts_ns": 2,
                  "metadata": {"x": "y" * (20 << 20)}}))
print(json.dumps({"type": "instant", "pid": 1, "tid": 1, "name": "b", "ts_ns": 3}))
' > "$T/big.jsonl"
	run -1 --separate-stderr is-cat --encode -o "$T/big.ist" "$T/big.jsonl"
	assert_equal "$stderr" "is-cat: '$T/big.jsonl':2: the instant record holds 20971560 bytes, over the 16 MiB a record may hold"
	run -0 is-cat "$T/big.ist"
	assert_equal "${#lines[@]}" 3
	assert_line --index 2 '{"type":"instant","pid":1,"tid":1,"name":"b","ts_ns":3}'
}


@test "a huge JSON line costs memory in proportion to the limits, not to the line" {
	# one 40 MB line of 20 M values took 1.8 GB and 11 s, refused at the
	# end; a 70 MB line was read whole
	/usr/bin/python3 -c '
import sys
w = sys.stdout.write
w("{\"type\":\"instant\",\"pid\":1,\"tid\":1,\"ts_ns\":1,\"name\":\"x\","
  "\"metadata\":{\"a\":[" + ",".join(["0"] * 20000000) + "]}}\n")
w("{\"type\":\"instant\",\"pid\":1,\"tid\":1,\"ts_ns\":2,\"name\":\"y\","
  "\"metadata\":{\"a\":\"" + "x" * 70000000 + "\"}}\n")
w("{\"type\":\"thread\",\"pid\":1,\"tid\":1,\"name\":\"ok\"}\n")' > "$BATS_TEST_TMPDIR/big.jsonl"
	run -1 --separate-stderr /usr/bin/time -f %M -o "$BATS_TEST_TMPDIR/rss" \
	    is-cat -e -o "$BATS_TEST_TMPDIR/big.ist" "$BATS_TEST_TMPDIR/big.jsonl"
	assert_equal "$stderr" "is-cat: '$BATS_TEST_TMPDIR/big.jsonl':1: the line holds over 2097152 JSON values, more than a record may
is-cat: '$BATS_TEST_TMPDIR/big.jsonl':2: the line is over the 64 MiB a line may take"
	# a line is kept up to 64 MiB, its values counted before they are
	# parsed: well under the 110 MB of input
	rss=$(tail -1 "$BATS_TEST_TMPDIR/rss")    # time says the exit first
	echo "peak RSS $rss KiB"
	# (not under ASan, whose quarantine and shadow are not is-cat's)
	[ -n "${IST_SANITIZE:-}" ] || (( rss < 100 * 1024 ))
	run -0 is-cat "$BATS_TEST_TMPDIR/big.ist"
	assert_line '{"type":"thread","pid":1,"tid":1,"name":"ok"}'
}

@test "a file, read ahead on a second thread, says what a pipe read on one does: whole, cut, damaged" {
	"$IST_BUILD/bench/bench" -J -m realistic -n 300000 -o "$T/b.ist" > /dev/null
	n=$(stat -c %s "$T/b.ist")
	for cut in $n $((n / 3)) $((n / 2 + 17)) $((n - 1)) damaged; do
		if [ $cut = damaged ]; then
			cp "$T/b.ist" "$T/c.ist"
			printf '\377' | dd of="$T/c.ist" bs=1 seek=$((n - 5000)) \
			    conv=notrunc status=none
		else
			head -c $cut "$T/b.ist" > "$T/c.ist"
		fi
		# (the records to files: 300,000 lines in bash's variables
		# took 40 s of a make check)
		run --separate-stderr bash -c "is-cat '$T/c.ist' > '$T/f.jsonl'"
		file_status=$status file_err=${stderr//c.ist/X}
		run --separate-stderr bash -c "is-cat < '$T/c.ist' > '$T/p.jsonl'"
		assert_equal "$status" "$file_status"
		cmp "$T/f.jsonl" "$T/p.jsonl"
		assert_equal "${stderr//<stdin>/X}" "${file_err//$T\//}"
	done
	# the whole trace: 300000 events and its header
	is-cat "$T/b.ist" > "$T/f.jsonl"
	assert_equal "$(wc -l < "$T/f.jsonl")" 300001
}
