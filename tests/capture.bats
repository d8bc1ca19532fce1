#!/usr/bin/env bats
# Capture ranges and analysis windows: is-record --capture-range, --delay,
# --duration and SIGUSR2; is-analyze --from/--to.  Counts are checked
# against the program's own; times against bounds load cannot break.
load helpers

setup() {
	T=$BATS_TEST_TMPDIR
}

# calls NAME FILE: cpu_call records of NAME in a decoded trace
calls() {
	grep -c "\"cpu_call\".*\"name\":\"$1\"" "$2" || true
}

@test "--capture-range api: inferscope.start()/stop() record exactly the calls inside, on every hook (3.9 setprofile, 3.11, 3.12 sys.monitoring)" {
	n=0
	for py in "$HOME"/.pyenv/versions/3.9.*/bin/python3 /usr/bin/python3 \
	    "$HOME"/.pyenv/versions/3.12.*/bin/python3; do
		[ -x "$py" ] || continue
		run --separate-stderr is-record --capture-range api \
		    -o "$T/t.ist" -- "$py" tests/py/capture_app.py
		assert_success
		is-cat "$T/t.ist" > "$T/t.jsonl"
		# the program's own count of calls inside its windows
		[ "$(calls __main__.work "$T/t.jsonl")" -eq "$stderr" ]
		[ "$stderr" -eq 10 ]
		# recording began off; two windows (api), each closed
		run grep -c '"type":"capture"' "$T/t.jsonl"
		[ "$output" -eq 5 ]
		grep -q '"capture".*"on":false,"reason":"start"' "$T/t.jsonl"
		# outer is cut twice: ended at the pause, begun at the window
		grep -q '"name":"__main__.outer".*"cut":2' "$T/t.jsonl"
		grep -q '"name":"__main__.outer".*"cut":1' "$T/t.jsonl"
		# the analysis leaves the pauses out of the run's time
		is-merge "$T/t.ist" | is-analyze --json > "$T/a.json"
		python3 - "$T/a.json" <<-'PY'
		import json, sys
		a = json.load(open(sys.argv[1]))
		r = a["run"]
		w = r["window"]
		assert w["pauses"] == 3 and w["capture_records"] == 5, w
		assert r["wall_ns"] == r["end_ns"] - r["start_ns"] - \
		    w["paused_ns"], r
		assert w["paused_ns"] >= 20_000_000, w   # the sleep inside
		f = {x["name"]: x["count"] for x in a["functions"]}
		assert f["__main__.work"] == 10, f
		PY
		n=$((n + 1))
	done
	[ "$n" -ge 2 ]
}

@test "outside is-record, start(), stop() and dump() do nothing and say so; dump() without a flight recorder too" {
	run /usr/bin/python3 -c 'import sys; sys.path.insert(0, "agents/python")
import inferscope; print(inferscope.start(), inferscope.stop(), inferscope.dump())'
	assert_success
	assert_output "False False False"
	run --separate-stderr is-record -o "$T/t.ist" -- /usr/bin/python3 -c \
	    'import inferscope; print(inferscope.dump())'
	assert_success
	assert_output False
}

@test "--delay and --duration: recording between them, the /proc sampler throughout" {
	run --separate-stderr is-record --delay 0.3 --duration 0.4 \
	    -o "$T/t.ist" -- sleep 1.5
	assert_success
	[[ "$stderr" == *"--duration is over"* ]]
	is-cat "$T/t.ist" > "$T/t.jsonl"
	python3 - "$T/t.jsonl" <<-'PY'
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	c = [e for e in ev if e["type"] == "capture"]
	assert [(e["on"], e["reason"]) for e in c] == [(False, "start"),
	    (True, "delay"), (False, "duration")], c
	on = c[1]["ts_ns"] - c[0]["ts_ns"]
	off = c[2]["ts_ns"] - c[0]["ts_ns"]
	# timers, both from the start: never early, late by at most a loaded
	# machine's second
	assert 0.3e9 <= on < 1.3e9, on
	assert 0.7e9 <= off < 1.7e9, off
	# samples before, inside and after the window
	s = [e["ts_ns"] for e in ev if e["type"] == "counter"]
	assert min(s) < c[1]["ts_ns"] and max(s) > c[2]["ts_ns"], (min(s),
	    max(s))
	PY
}

@test "SIGUSR2 to is-record pauses and resumes recording in the program" {
	cat > "$T/app.py" <<-'EOF2'
	import sys, time
	def tick(): pass
	print("ready", flush=True)
	t = time.monotonic()
	while time.monotonic() - t < 1.5:
	    tick(); time.sleep(0.001)
	EOF2
	is-record -o "$T/t.ist" -- /usr/bin/python3 "$T/app.py" \
	    > "$T/out.txt" 2> "$T/err.txt" &
	pid=$!
	for _ in $(seq 100); do grep -q ready "$T/out.txt" && break; sleep 0.05; done
	sleep 0.2
	kill -USR2 $pid
	sleep 0.3
	kill -USR2 $pid
	wait $pid
	grep -q "SIGUSR2: recording pauses" "$T/err.txt"
	grep -q "SIGUSR2: recording resumes" "$T/err.txt"
	is-cat "$T/t.ist" > "$T/t.jsonl"
	python3 - "$T/t.jsonl" <<-'PY'
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	c = [e for e in ev if e["type"] == "capture"]
	assert [(e["on"], e["reason"]) for e in c] == [(False, "signal"),
	    (True, "signal")], c
	off, on = c[0]["ts_ns"], c[1]["ts_ns"]
	ticks = [e for e in ev if e.get("name") == "__main__.tick"]
	# ticks before and after the pause; none starts inside it
	assert any(e["start_ns"] < off for e in ticks)
	assert any(e["start_ns"] > on for e in ticks)
	assert not [e for e in ticks if off < e["start_ns"] < on]
	PY
}

@test "--capture-range nvtx:NAME:COUNT records while the first COUNT ranges NAME are open" {
	[ -x "$IST_BUILD/examples/nvtx_pipeline" ] || skip "built without the NVTX headers"
	run --separate-stderr is-record --no-sample \
	    --capture-range nvtx:request:2 -o "$T/t.ist" -- \
	    "$IST_BUILD/examples/nvtx_pipeline"
	assert_success
	is-cat "$T/t.ist" > "$T/t.jsonl"
	# of five requests, the first two; nothing of the model's loading
	[ "$(grep -c '"nvtx_range".*"name":"request"' "$T/t.jsonl")" -eq 2 ]
	[ "$(grep -c '"nvtx_range".*"name":"infer"' "$T/t.jsonl")" -eq 2 ]
	[ "$(grep -c '"nvtx_mark"' "$T/t.jsonl")" -eq 2 ]
	! grep -q '"name":"load model"' "$T/t.jsonl"
	[ "$(grep -c '"capture".*"reason":"nvtx:request"' "$T/t.jsonl")" -eq 4 ]
}

@test "is-analyze --from/--to: the window's time exactly, ranges cut at its edges, said in the report" {
	cat > "$T/app.py" <<-'EOF2'
	import time
	def spin(s):
	    t = time.perf_counter()
	    while time.perf_counter() - t < s:
	        for _ in range(20000): pass
	spin(0.6)
	EOF2
	is-record -o "$T/t.ist" -- /usr/bin/python3 "$T/app.py"
	is-merge "$T/t.ist" > "$T/m.ist"
	# the window: 200 ms from 100 ms into spin, on a whole millisecond of
	# the trace (however long Python took to start on a loaded machine)
	from=$(is-analyze --json "$T/m.ist" | python3 -c '
import json, subprocess, sys
a = json.load(sys.stdin)
t0 = a["run"]["start_ns"]
for l in subprocess.run(["is-cat", sys.argv[1]], capture_output=True,
                        text=True).stdout.splitlines():
    e = json.loads(l)
    if e.get("name") == "__main__.spin":
        print("%.3f" % (-(-(e["start_ns"] - t0) // 1000000) / 1e3 + 0.1))' \
	    "$T/m.ist")
	to=$(python3 -c "print('%.3f' % ($from + 0.2))")
	is-analyze --json --from "$from" --to "$to" "$T/m.ist" > "$T/a.json"
	python3 - "$T/a.json" "$from" <<-'PY'
	import json, sys
	a = json.load(open(sys.argv[1]))
	r = a["run"]
	assert r["window"]["windowed"] is True
	assert r["wall_ns"] == 200_000_000, r
	assert r["start_ns"] - r["window"]["trace_start_ns"] == \
	    round(float(sys.argv[2]) * 1e9), r
	f = {x["name"]: x for x in a["functions"]}
	# spin ran through the window: 200 ms of it, to the nanosecond
	assert f["__main__.spin"]["incl_ns"] == 200_000_000, f["__main__.spin"]
	PY
	is-analyze --from "$from" --to "$to" "$T/m.ist" | is-report > "$T/r.md"
	grep -q "^| Window | $from s to $to s of the trace" "$T/r.md"
	grep -q '^| Duration | 200.00 ms |' "$T/r.md"
}

@test "is-analyze --from 1.001 is 1,001,000,000 ns, not a nanosecond short (1.001 * 1e9 is a hair under it in binary)" {
	printf '%s\n' '{"type":"process","pid":1,"name":"a"}' \
	    '{"type":"cpu_call","pid":1,"tid":1,"name":"f","start_ns":0,"end_ns":3000000000}' |
	    is-cat -e -o "$T/w.ist"
	run is-analyze --json --from 1.001 --to 1.003 "$T/w.ist"
	assert_success
	run python3 -c '
import json, sys
r = json.loads(sys.argv[1])["run"]
print(r["start_ns"] - r["window"]["trace_start_ns"], r["wall_ns"])' "$output"
	assert_output "1001000000 2000000"
}

@test "capture and window options: bad values are one clear line and exit 2" {
	run -2 is-record --capture-range bogus -- true
	assert_output --partial "--capture-range: 'bogus' is not api"
	run -2 is-record --delay x -- true
	assert_output --partial "--delay: 'x' is not a number of seconds"
	run -2 is-record --delay 1 --capture-range api -- true
	assert_output --partial "cannot be combined"
	run -2 is-analyze --from 2 --to 1 /dev/null
	assert_output --partial "--to must come after --from"
	run -2 is-record --dump-on SIGUSR3 -- true
	assert_output "is-record: --dump-on: 'SIGUSR3' is not SIGUSR1, api or exit"
}

# window FILE.ist: the merged trace's analysis, checked to end at the dump
# (the one capture record, off) and to count the program's calls exactly
dumped_window() {
	is-cat "$1" > "$T/t.jsonl"
	# every call before the ask (a dump taken by a writer pass whose
	# drain began before the ask kept fewer than the 300, once in about
	# 40 runs beside three busy loops)
	assert_equal "$(calls __main__.before "$T/t.jsonl")" 300
	assert_equal "$(calls __main__.after "$T/t.jsonl")" 0
	is-merge "$1" | is-analyze --json > "$T/a.json"
	python3 - "$T/t.jsonl" "$T/a.json" "$2" <<-'PY'
	import json, sys
	recs = [json.loads(l) for l in open(sys.argv[1])]
	caps = [r for r in recs if r["type"] == "capture"]
	assert [(c["on"], c["reason"]) for c in caps] == \
	    [(False, sys.argv[3])], caps
	r = json.load(open(sys.argv[2]))["run"]
	# nothing recorded after the dump: the run ends there
	assert r["window"]["paused_ns"] == r["end_ns"] - caps[0]["ts_ns"], r
	assert r["wall_ns"] == caps[0]["ts_ns"] - r["start_ns"], r
	PY
}

@test "--dump-on api and SIGUSR1: the flight recorder's window is written at the dump, what follows is not, and the analysis ends there" {
	run --separate-stderr is-record --dump-on api -o "$T/a.ist" -- \
	    /usr/bin/python3 tests/py/dump_app.py api
	assert_success
	assert_equal "$stderr" "True"
	dumped_window "$T/a.ist" dump:api
	run --separate-stderr is-record --dump-on SIGUSR1 -o "$T/s.ist" -- \
	    /usr/bin/python3 tests/py/dump_app.py signal
	assert_success
	assert_equal "$stderr" "$(printf 'is-record: SIGUSR1: the flight recorders write their windows\nTrue')"
	dumped_window "$T/s.ist" dump:signal
	# no dump at all: said, and nothing of the program's is kept
	run --separate-stderr is-record --dump-on SIGUSR1 -o "$T/n.ist" -- \
	    /usr/bin/python3 -c 'def f(): pass
f()'
	assert_success
	assert_equal "$stderr" "is-record: warning: --dump-on: no dump came (SIGUSR1 to is-record, inferscope.dump()): the trace holds no event of the recorded processes"
	[ "$(is-cat "$T/n.ist" | grep -c '"cpu_call"')" -eq 0 ]
}

@test "--ring with a dump: the overwritten start is a pause that ends where the kept window begins; the window after the dump follows at exit" {
	run --separate-stderr is-record --ring --trace-size-mb 1 \
	    -o "$T/r.ist" -- /usr/bin/python3 tests/py/dump_app.py api big
	assert_success
	assert_equal "$stderr" "True"
	is-cat "$T/r.ist" > "$T/t.jsonl"
	grep -q '"loss".*"reason":"flight recorder: older events overwritten"' \
	    "$T/t.jsonl"
	kept=$(grep -c '"instant".*"name":"big"' "$T/t.jsonl")
	[ "$kept" -gt 0 ] && [ "$kept" -lt 4000 ]
	# after the dump, at exit: all of the second window
	[ "$(calls __main__.after "$T/t.jsonl")" -eq 1000 ]
	is-merge "$T/r.ist" | is-analyze --json > "$T/a.json"
	python3 - "$T/t.jsonl" "$T/a.json" <<-'PY'
	import json, sys
	recs = [json.loads(l) for l in open(sys.argv[1])]
	caps = [r for r in recs if r["type"] == "capture"]
	assert [(c["on"], c["reason"]) for c in caps] == [(True, "ring"),
	    (False, "dump:api"), (True, "ring")], caps
	start, dump, again = (c["ts_ns"] for c in caps)
	assert again == dump, caps           # nothing overwritten since
	r = json.load(open(sys.argv[2]))["run"]
	assert r["start_ns"] < start < dump, (r, caps)
	# the one pause: from the trace's start to the kept window
	w = r["window"]
	assert w["pauses"] == 1 and w["paused_ns"] == start - r["start_ns"], r
	PY
}

@test "windows by step: --from step:N --to step:M and --skip-warmup, on a scope and on a Python function, against the program's own clock" {
	for kind in scope function; do
		run --separate-stderr is-record -o "$T/r.ist" -- \
		    /usr/bin/python3 tests/py/steps_app.py $kind
		assert_success
		is-merge -o "$T/m.ist" "$T/r.ist"
		is-analyze --json --from step:3 --to step:5 "$T/m.ist" > "$T/a.json"
		# the same window, as one range
		is-analyze --json --from step:3-5 "$T/m.ist" | cmp - "$T/a.json"
		is-analyze --json --skip-warmup "$T/m.ist" > "$T/w.json"
		python3 - "$T/a.json" "$T/w.json" "$kind" "$stderr" <<-'PY'
		import json, sys
		a, w = (json.load(open(f))["run"] for f in sys.argv[1:3])
		took, before3, after5 = sys.argv[4].rsplit(" ", 2)
		took = [float(x) for x in took.split()]
		name = "step" if sys.argv[3] == "scope" else "__main__.step"
		s = a["window"]["steps"]
		assert s == {"name": name, "record": "scope" if name == "step"
		    else "cpu_call", "count": 8, "from": 3, "to": 5,
		    "warmup": None}, s
		# steps 3 to 5 lie within the program's own bracket of them
		assert int(before3) <= a["start_ns"] < a["end_ns"] <= \
		    int(after5), (a, before3, after5)
		assert a["wall_ns"] >= 3 * 50_000_000, a
		# warm-up: the first steps over 1.5 times the median, by the
		# program's own durations
		med = sorted(took)[len(took) // 2]
		k = 0
		while k + 1 < len(took) and took[k] > 1.5 * med:
		    k += 1
		ws = w["window"]["steps"]
		assert ws["warmup"] == k and ws["from"] == k + 1, (ws, took)
		assert k == 2, took        # 0.5 s against 0.05 s
		assert w["end_ns"] == w["window"]["trace_end_ns"], w
		assert w["start_ns"] > int(before3) - 10**9 // 10, w
		PY
	done
	is-analyze --skip-warmup "$T/m.ist" | is-report > "$T/r.md"
	grep -q '^| Window | after warm-up (start-up and the first 2 steps left out): steps 3 to 8 of 8 (`__main__.step`), ' "$T/r.md"
	run -1 is-analyze --from step:9 "$T/m.ist"
	assert_output "is-analyze: '$T/m.ist' has 8 steps (__main__.step): step:9 is past them"
	run -2 is-analyze --skip-warmup - < "$T/m.ist"
	assert_output --partial "give a file, not standard input"
	run -2 is-analyze --from 1 --to step:3 "$T/m.ist"
	assert_output --partial "cannot be combined"
	run -2 is-analyze --from step:3-x "$T/m.ist"
	assert_output "is-analyze: --from: 'step:3-x' is not step:N or step:N-M with N a step number from 1"
	run -2 is-analyze --from step:5-3 "$T/m.ist"
	assert_output "is-analyze: --to must come after --from"
}
