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
	# and their concatenation: each segment numbers its strings afresh
	cat formats/vectors/valid/{all-types,multi-frame,edge-values}.ist \
	    > "$T/concat.ist"
	for py in $(built_pythons _inferscope_io); do
		for v in formats/vectors/valid/*.ist "$T/concat.ist"; do
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

@test "read(): a file is read ahead on a second thread; a child forked while it is open raises, and the parent reads on" {
	"$IST_BUILD/bench/bench" -J -m realistic -n 20000 -o "$T/b.ist" > /dev/null
	run /usr/bin/python3 -c 'import os, sys, inferscope
it = inferscope.read(sys.argv[1])
next(it)
pid = os.fork()
if pid == 0:
    try:
        sum(1 for _ in it)
        print("child read on", flush=True)
    except ValueError as e:
        print("child:", e, flush=True)
    os._exit(0)
print("child exit", os.waitpid(pid, 0)[1], flush=True)
print("parent", sum(1 for _ in it) + 1)' "$T/b.ist"
	assert_success
	assert_line --index 0 "child: cannot read '$T/b.ist': it was opened before a fork, in the parent process, whose thread read it ahead"
	assert_line --index 1 "child exit 0"
	assert_line --index 2 "parent $(is-cat "$T/b.ist" | wc -l)"
}

@test "analysis(): the analysis is-analyze makes of the same trace, shown as its reports" {
	rec_py="is-record -o $T/r.ist -- /usr/bin/python3 tests/py/steps_app.py scope"
	$rec_py 2> /dev/null
	is-merge -o "$T/m.ist" "$T/r.ist"
	is-analyze --json "$T/m.ist" > "$T/a.json"
	is-analyze "$T/m.ist" | is-report > "$T/r.md"
	is-report -f html "$T/m.ist" > "$T/r.html"
	run /usr/bin/python3 -c 'import json, sys, inferscope
a = inferscope.analysis(sys.argv[1])
assert a == json.load(open(sys.argv[2]))
assert a.markdown() == open(sys.argv[3]).read()
# in Jupyter: is-report'"'"'s page, timeline charts and all
h = a._repr_html_()
assert h == open(sys.argv[4]).read()
assert h.startswith("<!DOCTYPE html>") and "http" not in h.split("<body")[0]
print(repr(a))' "$T/m.ist" "$T/a.json" "$T/r.md" "$T/r.html"
	assert_success
	assert_line --index 0 --regexp '^\*\*Verdict: [a-z-]+\*\* \(confidence [0-9.]+\)\.'
	# a trace is-analyze wrote: the analysis it carries (here of a window,
	# which a fresh one would not have)
	is-analyze --skip-warmup "$T/m.ist" > "$T/an.ist"
	is-analyze --skip-warmup --json "$T/m.ist" > "$T/w.json"
	run /usr/bin/python3 -c 'import json, sys, inferscope
a = inferscope.analysis(sys.argv[1])
assert a == json.load(open(sys.argv[2]))
print(a["run"]["window"]["steps"]["from"])' "$T/an.ist" "$T/w.json"
	assert_success
	assert_output 3
	# the same analysis where another writer put it after the events in
	# their frame (found by reading whole, not by skimming the frames'
	# starts); and where the trace was cut before it, one made here from
	# what was read, with the cut as a warning, as is-report does
	is-cat "$T/an.ist" | is-cat --encode -o "$T/one.ist"
	assert_equal "$(is-info --json "$T/one.ist" | jq .frames)" 1
	head -c $(($(stat -c %s "$T/an.ist") - 200)) "$T/an.ist" > "$T/cut.ist"
	run /usr/bin/python3 -c 'import json, sys, warnings, inferscope
assert inferscope.analysis(sys.argv[1]) == json.load(open(sys.argv[2]))
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    a = inferscope.analysis(sys.argv[3])
print(a["run"]["events"] > 0, len(w), w[0].message)' \
	    "$T/one.ist" "$T/w.json" "$T/cut.ist"
	assert_success
	assert_output --regexp "^True 1 trace '.*cut.ist' is truncated: last [0-9]+ bytes dropped$"
	# step= names the step, as --step does
	python3 tests/py/scenarios.py steps | is-cat --encode -o "$T/s.ist"
	is-analyze --step load --json "$T/s.ist" > "$T/s.json"
	run /usr/bin/python3 -c 'import json, sys, inferscope
a = inferscope.analysis(sys.argv[1], step="load")
assert a == json.load(open(sys.argv[2]))
assert inferscope.analysis(sys.argv[1])["steps"]["name"] == "step"
print(a["steps"]["name"], a["steps"]["measured"])' "$T/s.ist" "$T/s.json"
	assert_success
	assert_output "load 10"
}

@test "dataframe(): one column per field, every row equal to is-cat's records of that type, strings as sorted categories, on every vector" {
	n=0
	for v in formats/vectors/valid/*.ist; do
		is-cat "$v" > "$T/cat.jsonl"
		run /usr/bin/python3 -W error -c 'import json, math, sys, inferscope
import pandas as pd
with open(sys.argv[2]) as f:
    cat = [json.loads(l) for l in f]
cols = {"cpu_call": ["pid", "tid", "name", "file", "line", "start_ns",
                     "end_ns", "cut", "raised", "yielded"]}
n = 0
for t in sorted({r["type"] for r in cat}):
    want = [r for r in cat if r["type"] == t]
    df = inferscope.dataframe(sys.argv[1], t)
    assert len(df) == len(want), (t, len(df), len(want))
    if t in cols:
        assert list(df.columns) == cols[t], list(df.columns)
    for i, r in enumerate(want):
        for c in df.columns:
            got = df[c].iloc[i]
            if c not in r and c in ("raised", "yielded"):
                assert got == False, (t, i, got)
            elif c not in r:
                assert got is None or got is pd.NA or (
                    isinstance(got, float) and math.isnan(got)), (t, c, got)
            else:
                w = r[c]
                if isinstance(got, (list, dict, str)) or got is None:
                    assert got == w, (t, i, c, got, w)
                else:
                    assert got == w and type(w)(got) == w, (t, i, c, got, w)
        n += 1
    # integers stay int64 where every row has them; times always do
    for c in ("start_ns", "end_ns", "ts_ns"):
        if c in df.columns and len(df):
            assert str(df[c].dtype) == "int64", (t, c, df[c].dtype)
    # strings are categories: each distinct one once, in sorted order,
    # exactly the ones the rows hold
    for c in ("name", "file", "domain", "host"):
        if c in df.columns:
            cats = list(df[c].cat.categories)
            assert cats == sorted({r[c] for r in want if c in r}), (t, c)
print(n)' "$v" "$T/cat.jsonl"
		assert_success
		assert_output "$(wc -l < "$T/cat.jsonl")"
		n=$((n + 1))
	done
	[ "$n" -ge 4 ]
}

@test "dataframe(): a recorded run's calls and scopes, counted and summed as is-analyze does; columns() on every Python" {
	is-record -o "$T/r.ist" -- /usr/bin/python3 tests/py/steps_app.py function 2> "$T/took"
	is-merge -o "$T/m.ist" "$T/r.ist"
	is-analyze --json "$T/m.ist" > "$T/a.json"
	run /usr/bin/python3 -c 'import json, sys, inferscope
a = json.load(open(sys.argv[2]))
df = inferscope.dataframe(sys.argv[1], "cpu_call")
df["dur"] = df.end_ns - df.start_ns
g = df.groupby("name").dur.agg(["count", "sum"])
for f in a["functions"]:
    assert g.loc[f["name"], "count"] == f["count"], f
# step() and work() do not recurse: their calls sum to the inclusive time
for name in ("__main__.step", "__main__.work"):
    f = next(f for f in a["functions"] if f["name"] == name)
    assert g.loc[name, "sum"] == f["incl_ns"], (name, g.loc[name], f)
print(g.loc["__main__.step", "count"], g.loc["__main__.work", "count"])
# the rows of the reference: the program timed each step with perf_counter
took = [float(x) for x in open(sys.argv[3]).read().split()[:8]]
steps = df[df.name == "__main__.step"].dur.tolist()
assert len(took) == len(steps) == 8
for t, s in zip(took, steps):
    # the call lies inside the bracket: what is between is a few us, or a
    # time slice on a loaded machine
    assert -1e5 <= t * 1e9 - s < 0.2 * t * 1e9, (t, s)' "$T/m.ist" "$T/a.json" "$T/took"
	assert_success
	assert_output "8 8"
	# the columns behind it, in every Python a reader was built for
	want=$(is-cat "$T/m.ist" | grep -c '"type":"cpu_call"')
	for py in $(built_pythons _inferscope_io); do
		run "$py" -c 'import sys, _inferscope_io
cols, n, trunc = _inferscope_io.columns(sys.argv[1], "cpu_call")
assert trunc is None and [c[0] for c in cols][:3] == ["pid", "tid", "name"]
print(n)' "$T/m.ist"
		assert_success
		assert_output "$want"
	done
}

@test "dataframe(): an unknown type, a damaged, a non-trace and a truncated file" {
	v=formats/vectors/valid/multi-frame.ist
	run /usr/bin/python3 -c 'import sys, inferscope; inferscope.dataframe(sys.argv[1], "calls")' "$v"
	assert_failure
	assert_output --partial "ValueError: inferscope: no record type 'calls' (formats/jsonl.md lists them)"
	run /usr/bin/python3 -c 'import sys, inferscope; inferscope.dataframe(sys.argv[1], "cpu_call")' formats/vectors/invalid/bit-flip.ist
	assert_failure
	assert_output --partial "ValueError: $(sed -e 's/^is-cat: //' formats/vectors/invalid/bit-flip.err)"
	run /usr/bin/python3 -c 'import sys, inferscope; inferscope.dataframe(sys.argv[1], "cpu_call")' README.md
	assert_failure
	assert_output --partial "ValueError: 'README.md' is not an InferScope trace"
	head -c $(($(stat -c %s "$v") - 5)) "$v" > "$T/cut.ist"
	is-cat "$T/cut.ist" 2> /dev/null > "$T/cut.jsonl" || true
	t=$(head -2 "$T/cut.jsonl" | tail -1 | jq -r .type)
	run --separate-stderr /usr/bin/python3 -W always -c 'import sys, inferscope
print(len(inferscope.dataframe(sys.argv[1], sys.argv[2])))' "$T/cut.ist" "$t"
	assert_success
	assert_output "$(grep -c "\"type\":\"$t\"" "$T/cut.jsonl")"
	[[ $stderr == *"UserWarning: "*"$T/cut.ist"* ]] || fail "$stderr"
}

@test "the README's notebook example runs as written on a recorded trace" {
	sed -n '/^!is-record -o run.ist/,/^```/p' README.md | sed '1d;$d' > "$T/nb.py"
	[ "$(wc -l < "$T/nb.py")" -eq 4 ] || fail "README block: $(cat "$T/nb.py")"
	cd "$T"
	is-record -o run.ist -- /usr/bin/python3 "$BATS_TEST_DIRNAME/py/steps_app.py" function 2> /dev/null
	# as a notebook runs it: each statement's expression value shown
	run /usr/bin/python3 - nb.py <<-'PY'
	import ast, sys
	g = {}
	for node in ast.parse(open(sys.argv[1]).read()).body:
	    if isinstance(node, ast.Expr):
	        node = ast.Expr(ast.Call(ast.Name("print", ast.Load()),
	                                 [node.value], []))
	    exec(compile(ast.fix_missing_locations(ast.Module([node], [])),
	                 "nb", "exec"), g)
	PY
	assert_success
	assert_line --regexp '^__main__\.step +[0-9]{10}$'
	assert_line --regexp "^\{'classification': '[a-z-]+'"
}
