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
