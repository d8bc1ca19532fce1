#!/usr/bin/env bats
# A disk that fills while a tool writes: one clear error, a non-zero exit,
# and no half-written file under the name asked for.  Two real faults: a
# file-size limit (EFBIG, anyone can set it) and, where this user may mount
# one, a 128 KiB tmpfs (ENOSPC).
load helpers

setup() {
	T=$BATS_TEST_TMPDIR
	# a trace whose every product is well over 128 KiB
	python3 - "$T/big.jsonl" <<'PY'
import json, random, sys
r = random.Random(5)
with open(sys.argv[1], "w") as f:
    f.write('{"type":"header","format":"inferscope-trace","version":[1,0]}\n')
    t = 0
    for i in range(60000):
        t += r.randrange(1, 5000)
        f.write(json.dumps({"type": "cpu_call", "pid": 7, "tid": 1 + i % 3,
                "name": "f%d" % r.randrange(4000), "file": "m%d.py" % (i % 97),
                "line": r.randrange(1, 900), "start_ns": t,
                "end_ns": t + r.randrange(10**6)}) + "\n")
PY
	is-cat -e -o "$T/big.ist" "$T/big.jsonl"
	[ "$(stat -c %s "$T/big.ist")" -gt 200000 ]
}

# Runs "$@" writing to $out; it must fail with one line naming the cause,
# and leave no file called $out (temporary files removed too).
must_fail_whole() {
	local tool=$1
	shift
	run --separate-stderr "$@"
	[ "$status" -ne 0 ] || fail "$tool: exit 0 on a full disk"
	[ "$status" -lt 128 ] || fail "$tool: killed ($status)"
	[ "${#stderr_lines[@]}" -ge 1 ] || fail "$tool: said nothing"
	[[ ${stderr_lines[-1]} == *"cannot write '$out': $why" ]] ||
	    fail "$tool: '${stderr_lines[-1]}'"
	[ ! -e "$out" ] || fail "$tool: left $out"
	[ -z "$(ls -A "$(dirname "$out")")" ] ||
	    fail "$tool: left $(ls -A "$(dirname "$out")")"
}

every_writer() {
	must_fail_whole is-cat is-cat -e -o "$out" "$T/big.jsonl"
	must_fail_whole is-merge is-merge -o "$out" "$T/big.ist"
	must_fail_whole is-analyze is-analyze -o "$out" "$T/big.ist"
	must_fail_whole is-report is-report -f perfetto -o "$out" "$T/big.ist"
}

# is-record writes its output after the program ends; under a file-size
# limit the program's own streams would hit it first
record_writer() {
	mkdir -p "$T/rtmp"
	TMPDIR=$T/rtmp run --separate-stderr is-record -o "$out" -- python3 -c '
def f(n): return n if n < 2 else f(n - 1) + f(n - 2)
f(25)'
	[ "$status" -eq 1 ] || fail "is-record: exit $status on a full disk"
	# the output cannot be written, the recording can still be: it is
	# kept and named
	dir=$(echo "$T"/rtmp/inferscope.*)
	assert_equal "${stderr_lines[-1]}" "is-record: cannot write '$out': $why; the recording is kept: is-record --recover $dir -o FILE writes it"
	[ -z "$(ls -A "$(dirname "$out")")" ] ||
	    fail "is-record: left $(ls -A "$(dirname "$out")")"
	is-record --recover "$dir" -o "$T/recovered.ist"
	# whole: fib(25) makes 242,785 calls of f
	assert_equal "$(is-cat "$T/recovered.ist" | grep -c '"name":"__main__.f"')" 242785
}

@test "a file-size limit mid-write: an error, no output file" {
	mkdir "$T/lim"
	out=$T/lim/out
	why="File too large"
	# SIGXFSZ ignored, as a shell's ulimit leaves it for a daemon: the
	# write fails with EFBIG instead of killing the tool
	trap '' XFSZ
	ulimit -f 128        # 128 KiB
	every_writer
	# the traced program's own stream hits the limit: one line says where,
	# no traceback in the program's output
	run --separate-stderr is-record -o /dev/null -- python3 -c '
def f(n): return n if n < 2 else f(n - 1) + f(n - 2)
f(25)'
	# how many: fib(25)'s 242,785 calls and the few records around them,
	# none written (the stream ends at its last whole frame), so the
	# loss is stated in the trace too
	[[ ${stderr_lines[0]} =~ ^"inferscope: error: cannot write '"[^\']*".ist': File too large; "(24[0-9]{4})" events are lost"$ ]] ||
	    fail "${stderr_lines[0]}"
	[[ $stderr != *Traceback* && $stderr != *Exception* ]] || fail "$stderr"
	# the flight recorder writes its stream at exit: the same, one line
	run --separate-stderr is-record --ring -o /dev/null -- python3 -c '
def f(n): return n if n < 2 else f(n - 1) + f(n - 2)
f(25)'
	[[ ${stderr_lines[0]} =~ ^"inferscope: error: cannot write '"[^\']*".ist': File too large; "(24[0-9]{4})" events are lost"$ ]] ||
	    fail "${stderr_lines[0]}"
	[[ $stderr != *Traceback* && $stderr != *Exception* ]] || fail "$stderr"
	# a report is about 10 KiB
	ulimit -f 8
	must_fail_whole inferscope inferscope analyze --format html \
	    --output "$out" "$T/big.ist"
}

@test "a full tmpfs mid-write: an error, no output file" {
	mkdir "$T/fs" "$T/fs2"
	mount -t tmpfs -o size=128k tmpfs "$T/fs" 2>/dev/null ||
	    skip "cannot mount a tmpfs here (needs root)"
	out=$T/fs/out
	why="No space left on device"
	every_writer
	record_writer
	# a report is about 10 KiB
	mount -t tmpfs -o size=8k tmpfs "$T/fs2"
	out=$T/fs2/out
	must_fail_whole inferscope inferscope analyze --format html \
	    --output "$out" "$T/big.ist"
}

teardown() {
	for d in fs fs2; do
		if mountpoint -q "$BATS_TEST_TMPDIR/$d" 2>/dev/null; then
			umount "$BATS_TEST_TMPDIR/$d"
		fi
	done
}
