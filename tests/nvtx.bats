#!/usr/bin/env bats
# NVTX ranges from a CPU-only C program: our own NVTX injection library,
# no CUDA involved.
load helpers

setup() {
	T=$BATS_TEST_TMPDIR
	[ -f "$IST_BUILD/lib/libinferscope-nvtx.so" ] ||
	    skip "no NVTX headers at build time (CUDA_HOME/include/nvtx3)"
	inc=${CUDA_HOME:-/usr/local/cuda}/include
	cc -shared -fPIC -I"$inc" -o "$T/libnvtxlib.so" tests/c/nvtx_lib.c -ldl
	cc -I"$inc" -o "$T/app" tests/c/nvtx_app.c -L"$T" -lnvtxlib -ldl \
	    -lpthread -Wl,-rpath,"$T"
}

@test "NVTX ranges: names, nesting, domains, threads, each duration between the program's own measures inside and around it" {
	is-record --no-sample -o "$T/t.ist" -- "$T/app" > "$T/own.txt" || [ $? -eq 3 ]
	is-cat "$T/t.ist" > "$T/t.jsonl"
	run python3 - "$T/t.jsonl" "$T/own.txt" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
r = {e["name"]: e for e in ev if e["type"] == "nvtx_range"}
own = {l.split()[0]: (int(l.split()[1]), int(l.split()[2]))
       for l in open(sys.argv[2])}
def ns(e): return e["end_ns"] - e["start_ns"]
# ours holds what the program measured inside the range, and no more than
# it measured around it (20 us for the two clocks' conversion), whatever
# the load stretched; a fixed 2% of the nominal sleep did not hold beside
# two busy loops (33.5 ms for 30)
for name, nominal in [("outer", 70), ("inner", 20), ("start-end", 30),
                      ("registered", 10), ("in-thread", 40),
                      ("from-library", 25)]:
    inside, around = own[name]
    assert inside - 20000 <= ns(r[name]) <= around + 20000, \
        (name, ns(r[name]), inside, around)
    assert ns(r[name]) >= nominal * 1000000, (name, ns(r[name]))
# nesting: inner inside outer, on one thread
assert r["outer"]["start_ns"] <= r["inner"]["start_ns"] <= r["inner"]["end_ns"] <= r["outer"]["end_ns"]
assert r["registered"]["domain"] == "my.domain"
assert "domain" not in r["outer"]
marks = [e for e in ev if e["type"] == "nvtx_mark"]
assert [m["name"] for m in marks] == ["checkpoint"]
threads = {e["tid"]: e.get("name") for e in ev if e["type"] == "thread"}
assert threads[r["in-thread"]["tid"]] == "nvtx-worker"
assert r["in-thread"]["tid"] != r["outer"]["tid"]
print("ok")
PY
	assert_success
	assert_output ok
}

@test "NVTX by the spec: nesting per thread and domain, a range ended on another thread is on its starting one, ids checked" {
	cc -I"$inc" -o "$T/cross" tests/c/nvtx_cross.c -ldl -lpthread
	is-record --no-sample -o "$T/t.ist" -- "$T/cross" > "$T/own.txt"
	# pushes and pops answer each domain's level (0-based)
	assert_equal "$(grep '^levels' "$T/own.txt")" "levels 0 0 1 1 0 0"
	assert_equal "$(grep '^ids' "$T/own.txt")" "ids 1"
	main=$(awk '$1 == "main" { print $2 }' "$T/own.txt")
	worker=$(awk '$1 == "worker" { print $2 }' "$T/own.txt")
	is-cat "$T/t.ist" > "$T/t.jsonl"
	r() { jq -r "select(.type == \"nvtx_range\" and .name == \"$1\") | $2" "$T/t.jsonl"; }
	# each pop ended its own domain's range: in-domain, pushed second,
	# outlives default-outer by the 2 ms sleep (one stack for all domains
	# ended it at default-outer's pop)
	assert_equal "$(r in-domain .domain)" other.domain
	assert_equal "$(r default-outer '.domain // "-"')" -
	run jq -s -r '[.[] | select(.type == "nvtx_range")] |
	    (map(select(.name == "in-domain"))[0]) as $d |
	    (map(select(.name == "default-outer"))[0]) as $o |
	    (map(select(.name == "default-inner"))[0]) as $i |
	    [$d.start_ns < $o.start_ns, $o.end_ns < $d.end_ns,
	     $o.start_ns <= $i.start_ns, $i.end_ns <= $o.end_ns,
	     $d.end_ns - $o.end_ns >= 2000000] | @tsv' "$T/t.jsonl"
	assert_output "$(printf 'false\ttrue\ttrue\ttrue\ttrue')"
	# the start/end ranges are on the threads that started them
	assert_equal "$(r handoff .tid)" "$main"
	assert_equal "$(r worker-started .tid)" "$worker"
	# 10000 open at once, each written once; a stale, repeated or foreign
	# id ends nothing: "second" runs its whole 3 ms
	assert_equal "$(r many .name | wc -l)" 10000
	assert_equal "$(r first .name | wc -l)" 1
	assert_equal "$(r second '.end_ns - .start_ns >= 3000000')" true
	assert_equal "$(jq -s '[.[] | select(.type == "loss")] | length' "$T/t.jsonl")" 0
}

@test "--ring reaches the NVTX stream: kept in memory, frames standing alone, all of them within --trace-size-mb" {
	cc -I"$inc" -o "$T/cross" tests/c/nvtx_cross.c -ldl -lpthread
	for ring in "" --ring; do
		is-record --no-sample $ring -o "$T/t.ist" -- "$T/cross" flood 1200 100 > "$T/own.txt"
		is-cat "$T/t.ist" > "$T/t.jsonl"
		n=$(awk '$1 == "flood" { print $2 }' "$T/own.txt")
		assert_equal "$(jq -r 'select(.type == "nvtx_range") | .name' "$T/t.jsonl" | grep -c '^flood')" $((n + 1))
		assert_equal "$(jq -s '[.[] | select(.type == "loss")] | length' "$T/t.jsonl")" 0
		headers=$(jq -r 'select(.type == "header") | .producer' "$T/t.jsonl" | grep -c nvtx)
		# 1.2 s of frames closed every 250 ms: each its own segment
		# with --ring (any may be forgotten), one segment without
		if [ -z "$ring" ]; then
			assert_equal "$headers" 1
		else
			[ "$headers" -ge 4 ] || fail "$headers NVTX frames with --ring"
		fi
	done
}

@test "NVTX_INJECTION64_PATH already set: a warning, and it is left alone" {
	NVTX_INJECTION64_PATH=/nonexistent/libother.so run --separate-stderr \
	    is-record --no-sample -o "$T/t.ist" -- "$T/app"
	assert_equal "$status" 3
	assert_equal "$stderr" "is-record: warning: NVTX_INJECTION64_PATH is set already: leaving it, NVTX ranges go to that tool"
	run is-info --json "$T/t.ist"
	refute_output --partial nvtx_range
}

@test "the NVTX library outside is-record: NVTX stays a no-op" {
	NVTX_INJECTION64_PATH=$IST_BUILD/lib/libinferscope-nvtx.so run "$T/app"
	assert_equal "$status" 3
}

@test "a Python process with NVTX holds two collectors: on SIGTERM both write what they have" {
	# the Python collector starts first and catches SIGTERM; NVTX's comes
	# with the first range and finds its handler: it takes the signal,
	# writes, and hands it on.  Four ranges of 25 ms, then the program
	# waits: the signal comes before either collector's 250 ms flush
	cat > "$T/app.py" <<'PY'
import ctypes, sys, time
lib = ctypes.CDLL(sys.argv[1])
def step():
    lib.lib_work()      # an NVTX range of 25 ms
for _ in range(4):
    step()
print("ready", flush=True)
time.sleep(30)
PY
	is-record -o "$T/t.ist" -- /usr/bin/python3 "$T/app.py" "$T/libnvtxlib.so" > "$T/out.txt" &
	pid=$!
	for _ in $(seq 200); do grep -q ready "$T/out.txt" && break; sleep 0.01; done
	kill -TERM $pid
	st=0
	wait $pid || st=$?
	assert_equal "$st" 143
	is-cat "$T/t.ist" > "$T/t.jsonl"
	nv=$(grep -c '"nvtx_range".*"from-library"' "$T/t.jsonl" || true)
	py=$(grep -c '"name":"__main__.step"' "$T/t.jsonl" || true)
	assert_equal "$nv $py" "4 4"
}

@test "a signal after the collector stopped takes its default action" {
	inc=${CUDA_HOME:-/usr/local/cuda}/include
	cc -I"$inc" -o "$T/late" tests/c/nvtx_late.c -ldl
	is-record --no-sample -o "$T/t.ist" -- "$T/late" > "$T/out.txt" &
	pid=$!
	for _ in $(seq 200); do grep -q ready "$T/out.txt" && break; sleep 0.01; done
	SECONDS=0
	kill -TERM $pid
	st=0
	wait $pid || st=$?
	# dead of SIGTERM at once, not 10 s later with status 0 (the stopped
	# collector's handler kept the signal)
	assert_equal "$st" 143
	[ "$SECONDS" -lt 5 ]
	run -0 is-cat "$T/t.ist"
	assert_line --partial '"type":"nvtx_range","pid":'
}
