"""clockgen.py OUT.jsonl TRUTH.json [HOST] - a synthetic trace whose GPU
clock runs at an offset and drift from the host clock, with calibration
jitter; TRUTH.json holds the true host times of the kernels.  With
CLOCKGEN_STEP_NS, the GPU clock steps by that much 5 s in (as CUPTI's
follows CLOCK_REALTIME, which NTP steps)."""
import json
import os
import random
import sys

out, truth_path = sys.argv[1], sys.argv[2]
host = sys.argv[3] if len(sys.argv) > 3 else "h1"
rnd = random.Random(7)
OFFSET = 2_500_000_123        # ns: the GPU clock is 2.5 s behind
DRIFT = 100e-6                # 100 ppm fast
T0 = 10_000_000_000


STEP = int(os.environ.get("CLOCKGEN_STEP_NS", "0"))


def dom(h):                   # host ns -> GPU domain ns
    return round((h - OFFSET) / (1 + DRIFT)) + (STEP if h >= T0 + 5e9
                                                 else 0)


lines = [{"type": "header", "format": "inferscope-trace", "version": [1, 0],
          "producer": "clockgen", "host": host, "pids": [7],
          "realtime_ns": 1_795_000_000_000_000_000 + (0 if host == "h1"
                                                       else 3_000_000),
          "monotonic_ns": T0}]
truth = {}
for i in range(100):          # calibration pairs over 10 s, ~200 ns jitter
    h = T0 + i * 100_000_000
    lines.append({"type": "clock", "pid": 7, "domain": "cupti:0",
                  "ts_ns": h + round(rnd.gauss(0, 200)), "domain_ns": dom(h)})
for i in range(500):          # launches, and their kernels 5 us later
    h = T0 + 1_000_000 + i * 19_000_000
    lines.append({"type": "cuda_api", "pid": 7, "tid": 7,
                  "name": "cudaLaunchKernel", "start_ns": h,
                  "end_ns": h + 3000, "correlation": i + 1})
    k = h + 5000
    lines.append({"type": "gpu_kernel", "pid": 7, "device": 0, "stream": 7,
                  "name": "k%d" % (i % 7), "start_ns": dom(k),
                  "end_ns": dom(k + 20000), "correlation": i + 1})
    truth[str(i + 1)] = [k, k + 20000]
rnd.shuffle(lines[1:])        # records arrive in any order
with open(out, "w") as f:
    for l in lines:
        f.write(json.dumps(l, separators=(",", ":")) + "\n")
with open(truth_path, "w") as f:
    json.dump(truth, f)
