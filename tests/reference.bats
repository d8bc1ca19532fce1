#!/usr/bin/env bats
# The reference suite: each program of tests/reference/ recorded on every
# Python here, its call counts equal to cProfile's (tests/py/refcheck.py).
load helpers

setup() {
	T=$BATS_TEST_TMPDIR
}

check_program() {
	local prog=$ROOT/tests/reference/$1 need n=0
	need=$(sed -n 's/^# needs: //p' "$prog")
	for py in $(built_pythons _inferscope); do
		if [ -n "$need" ] && ! "$py" -c "import $need" 2>/dev/null; then
			continue
		fi
		run -0 python3 "$ROOT/tests/py/refcheck.py" "$py" "$prog" "$T"
		[[ $output == *"; 0 differ" || $output == *", 0 differ" ]] ||
		    fail "$py: $output"
		n=$((n + 1))
	done
	[ "$n" -ge "${2:-4}" ] || fail "$1 ran on $n Pythons only"
}

@test "reference: Python and C call counts equal cProfile's, methods and polymorphic call sites included, on every Python" {
	check_program calls.py 5
}

@test "reference: C functions bound to a class are named as cProfile names them where it says their module (torch.add, not type.add), else by their class (dict.fromkeys), on every Python" {
	local prog=$ROOT/tests/reference/cnames.py n=0 want
	for py in $(built_pythons _inferscope); do
		want=$(sed -n 's/^# names: //p' "$prog")
		"$py" -c 'import torch' 2>/dev/null &&
		    want="$want $(sed -n 's/^# torch: //p' "$prog")"
		run -0 is-record --no-sample -o "$T/n.ist" -- "$py" "$prog"
		# (C calls only to jq: import torch's Python calls took
		# it seconds)
		is-cat "$T/n.ist" | grep '"type":"cpu_call"' |
		    grep -v '"file":' | jq -r 'select(.type == "cpu_call" and
		    (has("file") | not)) | .name' | sort -u > "$T/names"
		for w in $want; do
			grep -qxF "$w" "$T/names" || fail "$py: no $w in
$(grep -v '^_' "$T/names" | head -50)"
		done
		! grep -E '^type\.(add|ones|tensor|maketrans|fromkeys|from_bytes|now)$' \
		    "$T/names" || fail "$py: named by the class's type"
		if "$py" -c 'import torch' 2>/dev/null; then
			# cProfile's own labels of torch's functions: ours
			"$py" -m cProfile -o "$T/n.prof" "$prog"
			"$py" -c 'import pstats, sys
for f, l, name in pstats.Stats(sys.argv[1]).stats:
    if name.startswith("<built-in method torch.") and name[23:-1] in (
            "add", "ones", "tensor"):
        print(name[17:-1])' "$T/n.prof" > "$T/theirs"
			assert_equal "$(wc -l < "$T/theirs")" 3
			while read -r w; do
				grep -qxF "$w" "$T/names" || fail "cProfile's $w"
			done < "$T/theirs"
		fi
		n=$((n + 1))
	done
	[ "$n" -ge 5 ] || fail "ran on $n Pythons only"
}

@test "reference: threads started by threading and by _thread directly are recorded, on every Python" {
	check_program threads.py 5
}

@test "reference: numpy's C methods (ndarray.sum, ndarray.item) counted as cProfile counts them" {
	check_program numpy_ops.py 1
}

@test "reference: functions that share a name (a property's getter and setter, a function defined twice, lambdas, comprehensions) are rows of their own in the analysis, each with cProfile's count at its line, on every Python" {
	local n=0
	check_program samename.py 5
	for py in $(built_pythons _inferscope); do
		run -0 python3 "$ROOT/tests/py/fncheck.py" "$py" \
		    "$ROOT/tests/reference/samename.py" "$T"
		[[ $output == *"names shared by several"*"; 0 differ" ]] ||
		    fail "$py: $output"
		n=$((n + 1))
	done
	[ "$n" -ge 5 ] || fail "ran on $n Pythons only"
}

@test "reference: each module's self and cumulative import time against -X importtime in the same run, on every Python" {
	local n=0
	for py in $(built_pythons _inferscope); do
		# ours and -X importtime read the clock a few microseconds
		# apart: a preemption that falls between moves one figure by a
		# time slice, which a loaded machine does now and then; a
		# second run that differs too is a difference
		for try in 1 2; do
			is-record -o "$T/i.ist" -- "$py" -X importtime \
			    tests/reference/imports.py 2> "$T/importtime.txt"
			is-merge "$T/i.ist" | is-analyze --json > "$T/a.json"
			run python3 tests/py/importcheck.py "$T/a.json" \
			    "$T/importtime.txt"
			[[ $status -eq 0 && ${lines[0]} == "20 modules, 0 differ" ]] &&
			    break
			[ "$try" -eq 1 ] || fail "$py: $output"
		done
		n=$((n + 1))
	done
	[ "$n" -ge 5 ] || fail "ran on $n Pythons only"
}
