#!/usr/bin/env bats
# The Python face: traces read from Python through libinferscope's reader
# (inferscope.read) and analysed by its analyzer (inferscope.analysis),
# checked against the tools' own output of the same files.
load helpers

setup() {
	T=$BATS_TEST_TMPDIR
	export PYTHONPATH=$IST_BUILD/python
}

@test "read(): every record of every valid vector equals is-cat's JSON Lines, on every Python" {
	n=0
	for py in $(built_pythons _inferscope_io); do
		for v in formats/vectors/valid/*.ist; do
			is-cat "$v" > "$T/cat.jsonl"
			run "$py" -c 'import json, sys, inferscope
recs = list(inferscope.read(sys.argv[1]))
cat = [json.loads(l) for l in open(sys.argv[2])]
assert recs == cat, [(a, b) for a, b in zip(recs, cat) if a != b][:2]
# an open file reads the same
with open(sys.argv[1], "rb") as f:
    assert list(inferscope.read(f)) == cat
print(len(recs))' "$v" "$T/cat.jsonl"
			assert_success
			assert_output "$(wc -l < "$T/cat.jsonl")"
		done
		n=$((n + 1))
	done
	[ "$n" -ge 5 ] || fail "read() ran on $n Pythons only"
}

@test "read(): a damaged trace raises the tools' message; a truncated one warns and yields what precedes" {
	v=formats/vectors/invalid/bit-flip.ist
	run /usr/bin/python3 -c 'import sys, inferscope
try:
    list(inferscope.read(sys.argv[1]))
except ValueError as e:
    print(e)' "$v"
	assert_success
	assert_output "$(sed -e 's/^is-cat: //' formats/vectors/invalid/bit-flip.err)"
	# cut inside the last frame: the records before it, and a warning
	f=formats/vectors/valid/multi-frame.ist
	head -c $(($(stat -c %s "$f") - 5)) "$f" > "$T/cut.ist"
	is-cat "$T/cut.ist" > "$T/cut.jsonl" 2> "$T/cut.err" || true
	run --separate-stderr /usr/bin/python3 -W always -c 'import json, sys, inferscope
recs = list(inferscope.read(sys.argv[1]))
assert recs == [json.loads(l) for l in open(sys.argv[2])]
print(len(recs))' "$T/cut.ist" "$T/cut.jsonl"
	assert_success
	assert_output "$(wc -l < "$T/cut.jsonl")"
	[[ $stderr == *"UserWarning: "*"$T/cut.ist"* ]] || fail "$stderr"
	run /usr/bin/python3 -c 'import inferscope; list(inferscope.read("/nonexistent.ist"))'
	assert_failure
	assert_output --partial "OSError: cannot open '/nonexistent.ist': No such file or directory"
}

@test "analysis(): the analysis is-analyze makes of the same trace, shown as its reports" {
	rec_py="is-record -o $T/r.ist -- /usr/bin/python3 tests/py/steps_app.py scope"
	$rec_py 2> /dev/null
	is-merge -o "$T/m.ist" "$T/r.ist"
	is-analyze --json "$T/m.ist" > "$T/a.json"
	is-analyze "$T/m.ist" | is-report > "$T/r.md"
	run /usr/bin/python3 -c 'import json, sys, inferscope
a = inferscope.analysis(sys.argv[1])
assert a == json.load(open(sys.argv[2]))
assert a.markdown() == open(sys.argv[3]).read()
h = a._repr_html_()
assert h.startswith("<!DOCTYPE html>") and "http" not in h.split("<body")[0]
print(repr(a))' "$T/m.ist" "$T/a.json" "$T/r.md"
	assert_success
	assert_line --index 0 --regexp '^\*\*Verdict: [a-z-]+\*\* \(confidence [0-9.]+\)\.'
}
