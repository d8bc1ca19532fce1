#!/usr/bin/env bats
# What runs at once on a GPU (formats/analysis.md, devices[].concurrency)
# and which Python function launched each kernel's time (kernels[]
# .launched_from): a trace worked out by hand, and random ones checked
# against a count made microsecond by microsecond (tests/py/conc_gen.py).

load helpers

setup() {
	T=$BATS_TEST_TMPDIR
}

@test "three streams worked out by hand: copy under kernels, 3 kernels at once, busy and overlap per stream, the launching function" {
	python3 tests/py/conc_gen.py hand | is-cat --encode | is-merge -o "$T/h.ist"
	is-analyze --json "$T/h.ist" > "$T/a.json"
	run jq -c '.devices[0].concurrency | [.kernel_ns, .copy_ns,
	    .copy_under_kernels_ns, .copy_under_kernels_pct,
	    .max_concurrent_kernels, .concurrent_kernels_ns, .multi_stream_ns]' "$T/a.json"
	assert_output '[1400000,500000,500000,100,3,500000,1000000]'
	run jq -c '[.devices[0].concurrency.streams[] | [.stream, .ops, .kernels, .busy_ns, .busy_pct, .overlap_ns]]' "$T/a.json"
	assert_output '[[7,2,2,1400000,100,1000000],[8,2,1,1000000,71.43,1000000],[9,1,1,200000,14.29,200000]]'
	# gemm: 1000 us launched by forward, 900 us by attn
	run jq -c '[.kernels[] | [.name, .launched_from.function, .launched_from.line, .launched_from.gpu_ns, .launched_from.share]]' "$T/a.json"
	assert_output '[["gemm","model.forward",10,1000000,0.5263],["softmax","model.forward",10,200000,1]]'
	# the report says it
	is-report -f md -o "$T/r.md" "$T/h.ist"
	grep -qxF 'GPU 0 ran kernels for 1.40 ms and copies for 500.0 µs, 100.0% of the copy time under kernels; at most 3 kernels at once (two or more for 500.0 µs); 3 streams, two or more busy for 1.00 ms.' "$T/r.md"
	grep -qxF '| 8 | 2 | 1 | 1.00 ms (71.4%) | 1.00 ms |' "$T/r.md"
	grep -qxF '| `gemm` | 3 | 1.90 ms | 633.3 µs | 1.00 ms | `model.forward` (model.py:10) 52.6% |' "$T/r.md"
}

@test "random operations on four streams: every concurrency figure equals a count made microsecond by microsecond" {
	for seed in 1 2 3 4 5; do
		python3 tests/py/conc_gen.py random "$seed" "$T/want.json" |
		    is-cat --encode | is-merge | is-analyze --json |
		    jq -cS '.devices[0].concurrency | del(.copy_under_kernels_pct) |
		    .streams |= (map({key: (.stream | tostring), value: [.busy_ns, .overlap_ns]}) | from_entries)' > "$T/got.json"
		assert_equal "$(jq -cS . "$T/got.json")" "$(jq -cS . "$T/want.json")"
	done
}

@test "one stream of kernels and no copies: nothing ran at once, and the report says nothing of it" {
	python3 tests/py/steps_gen.py overlap | is-cat --encode | is-merge -o "$T/o.ist"
	run jq -c '.devices[0].concurrency | [.max_concurrent_kernels, .concurrent_kernels_ns, .multi_stream_ns, .copy_ns, (.streams | length)]' < <(is-analyze --json "$T/o.ist")
	assert_output '[1,0,0,0,1]'
	is-report -f md -o "$T/r.md" "$T/o.ist"
	run grep -c 'ran kernels for' "$T/r.md"
	assert_output 0
}

@test "40 streams: the first 31 seen by name, the rest summed in one null row" {
	python3 -c '
import json
for i in range(40):
    # stream 100+i busy (i+1) us, one after another
    s = 1_000_000_000 + i * 1_000_000
    print(json.dumps({"type": "gpu_kernel", "pid": 1, "device": 0, "stream": 100 + i,
        "name": "k", "start_ns": s, "end_ns": s + (i + 1) * 1000}))
' | is-cat --encode | is-merge -o "$T/s.ist"
	run jq -c '.devices[0].concurrency | [(.streams | length), .streams[0].stream, .streams[0].busy_ns,
	    ([.streams[] | select(.stream == null)] | map([.ops, .busy_ns]))]' < <(is-analyze --json "$T/s.ist")
	# streams 131..139 (busy 32..40 us) share the last row: 9 ops, 324 us
	assert_output '[32,null,324000,[[9,324000]]]'
}

@test "two processes on one GPU, each with its stream 7: two streams, and what they ran side by side" {
	python3 -c '
import json
T = 1_000_000_000
# pid 1: [0, 600) us; pid 2: [400, 1000) us, both on device 0, stream 7
for pid, s, e in ((1, 0, 600), (2, 400, 1000)):
    print(json.dumps({"type": "gpu_kernel", "pid": pid, "device": 0, "stream": 7,
        "name": "k", "start_ns": T + s * 1000, "end_ns": T + e * 1000}))
' | is-cat --encode | is-merge -o "$T/p.ist"
	run jq -c '.devices | length, (.[0].concurrency | [.max_concurrent_kernels, .concurrent_kernels_ns, .multi_stream_ns,
	    [.streams[] | [.pid, .stream, .busy_ns, .overlap_ns]]])' < <(is-analyze --json "$T/p.ist")
	assert_output $'1\n[2,200000,200000,[[1,7,600000,200000],[2,7,600000,200000]]]'
	is-report -f md -o "$T/r.md" "$T/p.ist"
	grep -qxF '| 7 (pid 2) | 1 | 1 | 600.0 µs (60.0%) | 200.0 µs |' "$T/r.md"
}
