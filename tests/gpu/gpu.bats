#!/usr/bin/env bats
# make check-gpu: the GPU example through the whole pipeline, on a machine
# with a CUDA device and PyTorch built for it.

load ../helpers
# helpers.bash takes the folder above the test file for the root
ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
cd "$ROOT"

@test "the GPU example runs and its report names the GPU scopes" {
	python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' ||
	    fail "no CUDA device visible to python3's torch"
	cd "$BATS_TEST_TMPDIR"
	INFERSCOPE_PYTHON=python3 run -0 inferscope run --report r.json \
	    "$ROOT/examples/torch_gpu.py" 20
	run jq -r '.analysis.scopes[] | [.name, .count] | @tsv' r.json
	assert_line "$(printf 'step\t20')"
	assert_line "$(printf 'readback\t20')"
}

@test "the CUDA collector's own records: kernels, a pageable H2D and a D2H copy, the .item() sync on its thread, every kernel after its launch" {
	python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' ||
	    fail "no CUDA device visible to python3's torch"
	cd "$BATS_TEST_TMPDIR"
	run -0 is-record -o t.ist -- python3 "$ROOT/examples/torch_gpu.py" 20
	is-merge t.ist | is-cat > t.jsonl
	run python3 - t.jsonl <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
by = lambda t: [e for e in ev if e["type"] == t]
kern, h2d, d2h, syncs = by("gpu_kernel"), by("h2d_copy"), by("d2h_copy"), by("sync")
api = {e["correlation"]: e for e in by("cuda_api") if "correlation" in e}
reads = [e for e in by("scope") if e["name"] == "readback"]
# 8 Linear layers a step, 20 steps: at least one kernel each
assert len(kern) >= 160, "kernels: %d" % len(kern)
# the input, 64 x 256 float32 from pageable memory, every step
big = [c for c in h2d if c["bytes"] == 64 * 256 * 4]
assert len(big) >= 20 and all(c["pageable"] for c in big), h2d[:3]
assert len(d2h) >= 20, "d2h copies: %d" % len(d2h)
# .item() waits for the stream on the thread that ran the readback scope
tid = reads[0]["tid"]
inside = [s for s in syncs if s["tid"] == tid and any(
    r["start_ns"] <= s["start_ns"] and s["end_ns"] <= r["end_ns"]
    for r in reads)]
assert len(inside) >= 20, "syncs inside readback: %d of %d" % (
    len(inside), len(syncs))
# every kernel has its launch, and starts after the launch starts
late = 0
for k in kern:
    a = api.get(k.get("correlation"))
    assert a is not None, k
    late += k["start_ns"] < a["start_ns"]
assert late == 0, "%d kernels start before their launch" % late
print("%d kernels, %d h2d, %d d2h, %d syncs in readback" % (
    len(kern), len(h2d), len(d2h), len(inside)))
PY
	assert_success
}

@test "--capture-range cudaProfilerApi on a GPU: torch.cuda.profiler.start()/stop() bracket the kernels analysed" {
	python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' ||
	    fail "no CUDA device visible to python3's torch"
	cd "$BATS_TEST_TMPDIR"
	cat > app.py <<'PY'
import torch
x = torch.ones(1024, 1024, device="cuda")
for _ in range(5):            # before: not analysed
    x = x * 1.0001
torch.cuda.synchronize()
torch.cuda.profiler.start()
for _ in range(7):
    x = torch.mm(x, x) / 1024
torch.cuda.synchronize()
torch.cuda.profiler.stop()
for _ in range(3):
    x = x * 1.0001
torch.cuda.synchronize()
PY
	run -0 is-record --capture-range cudaProfilerApi -o t.ist -- python3 app.py
	is-merge t.ist | is-analyze --json > a.json
	run jq -r '[.kernels[] | .count] | add' a.json
	# the 7 matmuls and 7 divisions, whatever kernels torch picks
	[ "$output" -ge 14 ] && [ "$output" -le 21 ] || fail "$output kernels"
	run jq -r '[.kernels[] | select(.name | test("mul|Mul")) |
	    select(.name | test("gemm|sgemm|cutlass") | not) | .count] | add // 0' a.json
	[ "$output" -le 7 ] || fail "$output elementwise multiplies analysed"
}

# gpu_ready: a CUDA device that python3's torch sees, or the test fails
gpu_ready() {
	python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' ||
	    fail "no CUDA device visible to python3's torch"
}

# probe NAME: one of tests/gpu/cuda_probes.py's probes
probe() {
	gpu_ready
	run python3 "$ROOT/tests/gpu/cuda_probes.py" "$BATS_TEST_TMPDIR" "$1" \
	    "${IST_GPU_FIGURES:+$IST_GPU_FIGURES/probes.json}"
	echo "$output"
	assert_success
}

@test "the CUDA stream names its CUPTI, and each device its UUID as nvidia-smi does" {
	probe version
}

@test "a program that exits with work queued: no zero or backwards times, every kernel recorded or counted lost" {
	probe exit_unsynced
}

@test "Event.query() and Stream.query() polls are no synchronisations" {
	probe query_loop
}

@test "a synchronous cudaMemcpy: its pageable D2H copy, and a memcpy sync" {
	probe memcpy
}

@test "torch.profiler started and stopped inside a recorded run: kernels before and after it, or a loss that says so" {
	probe profiler_inside
}

@test "pinned host memory is no GPU memory" {
	probe pinned
}

@test "a CUDA graph replayed 50 times: its kernels, each linked to cudaGraphLaunch" {
	probe graph
}

@test "a CUDA parent forks a child that exits: the parent's kernels go on being recorded" {
	probe fork
}

@test "a spawned child using the GPU lands in the same trace, on the same GPU and clock" {
	probe spawn
}

@test "--ring on a GPU: frames filled between the collector's clock pairs are on the program's clock, every kernel inside its span" {
	probe ring
}

@test "the CUDA collector's own memory is said and left out of the program's" {
	probe memory
}

@test "a CUDA collector that cannot load leaves the program running" {
	probe bad_injection
}

@test "a small transformer served step by step: kernels, copies, syncs and NVTX against Kineto and the program's clock; overhead against torch.profiler; host- and GPU-bound verdicts" {
	gpu_ready
	run python3 "$ROOT/tests/gpu/serve_check.py" "$BATS_TEST_TMPDIR" \
	    "${IST_GPU_FIGURES:+$IST_GPU_FIGURES/serve.json}"
	echo "$output"
	assert_success
}
