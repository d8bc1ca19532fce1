"""cuptigen.py OUT.jsonl TRUTH.json - two segments as is-record leaves them
for a CUDA program: the Python collector's (host clock: a scope around each
step) and the CUDA collector's (header clocks ["cupti"]: API calls, kernels,
syncs and allocations all in CUPTI's clock, 1.7 s off and 50 ppm fast,
with calibration pairs).  TRUTH.json holds the true host times."""
import json
import random
import sys

out, truth_path = sys.argv[1], sys.argv[2]
rnd = random.Random(11)
OFFSET = -1_700_000_000_321   # CUPTI's clock is ahead of the host's
DRIFT = 50e-6
T0 = 20_000_000_000


def dom(h):
    return round((h - OFFSET) / (1 + DRIFT))


py = [{"type": "header", "format": "inferscope-trace", "version": [1, 0],
       "producer": "inferscope-python 0.1.0 (CPython 3.12.0)", "host": "h1",
       "pids": [9], "clocks": ["monotonic"],
       "realtime_ns": 1_795_000_000_000_000_000, "monotonic_ns": T0}]
cu = [{"type": "header", "format": "inferscope-trace", "version": [1, 0],
       "producer": "inferscope-cupti 0.1.0", "host": "h1", "pids": [9],
       "clocks": ["cupti"], "realtime_ns": 1_795_000_000_000_000_000,
       "monotonic_ns": T0}]
truth = {}
for i in range(40):
    h = T0 + i * 250_000_000
    cu.append({"type": "clock", "pid": 9, "domain": "cupti",
               "ts_ns": h + round(rnd.gauss(0, 200)), "domain_ns": dom(h)})
cu.append({"type": "memory_alloc", "pid": 9, "device": 0,
           "bytes": 1 << 30, "ts_ns": dom(T0 + 500_000)})
for i in range(100):
    h = T0 + 1_000_000 + i * 90_000_000
    py.append({"type": "scope", "pid": 9, "tid": 9, "name": "step",
               "start_ns": h - 100_000, "end_ns": h + 2_000_000})
    cu.append({"type": "cuda_api", "pid": 9, "tid": 9,
               "name": "cudaLaunchKernel_v7000", "start_ns": dom(h),
               "end_ns": dom(h + 4000), "correlation": i + 1})
    cu.append({"type": "gpu_kernel", "pid": 9, "device": 0, "stream": 7,
               "name": "gemm", "start_ns": dom(h + 10_000),
               "end_ns": dom(h + 1_010_000), "correlation": i + 1})
    cu.append({"type": "sync", "pid": 9, "tid": 9, "kind": "stream",
               "start_ns": dom(h + 5000), "end_ns": dom(h + 1_011_000)})
    truth[str(i + 1)] = {"api": h, "kernel": [h + 10_000, h + 1_010_000],
                         "sync": h + 5000}
with open(out, "w") as f:
    for l in py + cu:
        f.write(json.dumps(l, separators=(",", ":")) + "\n")
with open(truth_path, "w") as f:
    json.dump(truth, f)
