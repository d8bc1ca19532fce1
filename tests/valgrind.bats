#!/usr/bin/env bats
# The C tools under valgrind memcheck: no invalid access, no use of
# uninitialised memory, no leak, on good and bad inputs.

load helpers

setup() {
	T=$BATS_TEST_TMPDIR
	# the sanitizer run checks the same things its own way
	[ -z "${IST_SANITIZE:-}" ] ||
	    skip "built with -fsanitize=$IST_SANITIZE: ASan and valgrind do not mix"
	command -v valgrind >/dev/null ||
	    fail "valgrind is not installed (scripts/deps.sh check installs it)"
	is-cat --encode -o "$T/ex.ist" examples/trace.jsonl
	python3 tests/py/scenarios.py gpu_idle | is-cat --encode -o "$T/g.ist"
	head -c 500 "$T/ex.ist" > "$T/cut.ist"
}

# vg CMD...: memcheck, failing the test on any error or leak
vg() {
	run --separate-stderr valgrind -q --error-exitcode=99 \
	    --leak-check=full --errors-for-leak-kinds=definite,indirect \
	    --show-leak-kinds=definite,indirect "$@"
	[ "$status" -ne 99 ] || fail "valgrind: $* $stderr"
}

@test "valgrind: is-cat, is-info, is-merge on good, cut and corrupt traces" {
	for f in "$T/ex.ist" "$T/cut.ist" "$VEC"/invalid/bit-flip.ist "$VEC"/invalid/absurd-length.ist "$VEC"/invalid/deep-nesting.ist; do
		[ -f "$f" ] || continue
		vg is-cat "$f"
		vg is-info --json "$f"
		vg is-merge -o "$T/m.ist" "$f"
	done
	vg is-cat --encode -o "$T/e.ist" examples/trace.jsonl
}

@test "valgrind: is-analyze and is-report in every format" {
	is-merge -o "$T/m.ist" "$T/ex.ist"
	vg is-analyze -o "$T/a.ist" "$T/m.ist"
	vg is-analyze --json --baseline "$T/g.ist" --fail-on 'regression>5%' "$T/m.ist"
	for f in md html json perfetto; do
		vg is-report -f $f -o "$T/r.$f" "$T/a.ist"
	done
	vg is-report -o "$T/r.md" "$T/cut.ist"
}

@test "valgrind: inferscope config show and analyze" {
	vg inferscope config show
	cd "$T"
	vg inferscope analyze --output r.html ex.ist
}
