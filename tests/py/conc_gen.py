#!/usr/bin/env python3
"""conc_gen.py hand | random SEED EXPECTED.json: synthetic GPU traces
(formats/jsonl.md) for what runs at once on a GPU (devices[].concurrency)
and which Python function launched each kernel's time (kernels[]
.launched_from).

hand: three streams, worked out in the comment below.
random: 400 operations on 4 streams of one GPU, at random microseconds;
  the expected figures, counted microsecond by microsecond (not by a sweep),
  go to EXPECTED.json.
"""
import json
import random
import sys

US = 1000
T0 = 1_000_000_000


def launch(out, fn, line, corr, at):
    """A Python function around the launch call that starts op corr."""
    out.append({"type": "cpu_call", "pid": 1, "tid": 1, "name": fn,
                "file": "model.py", "line": line, "start_ns": at,
                "end_ns": at + 20 * US})
    out.append({"type": "cuda_api", "pid": 1, "tid": 1,
                "name": "cudaLaunchKernel", "start_ns": at + 5 * US,
                "end_ns": at + 10 * US, "correlation": corr})


def hand(out):
    # (us)  stream 7: gemm [0, 1000) by forward, gemm [1000, 1400) by attn
    #       stream 8: gemm [200, 700) by attn, an h2d copy [700, 1200)
    #       stream 9: softmax [300, 500) by forward
    # kernels run all 1400 us; the copy's 500 us all under a kernel; up to
    # 3 kernels at once, 2 or more for [200, 700): 500 us; 2 or more
    # streams for [200, 1200): 1000 us.  Stream 7 busy 1400 (1000 beside
    # another), 8 busy 1000 (1000), 9 busy 200 (200).  gemm: 1900 us, 1000
    # of it launched by forward (52.63%); softmax: 200 us, all forward's.
    ops = [(7, "gemm", 0, 1000, "model.forward", 10),
           (8, "gemm", 200, 700, "model.attn", 20),
           (9, "softmax", 300, 500, "model.forward", 10),
           (8, None, 700, 1200, None, 0),
           (7, "gemm", 1000, 1400, "model.attn", 20)]
    out.append({"type": "thread", "pid": 1, "tid": 1, "name": "MainThread"})
    t = T0 - 100_000 * US
    for corr, (stream, name, s, e, fn, line) in enumerate(ops, 1):
        if fn:
            launch(out, fn, line, corr, t)
            t += 30 * US
        rec = {"pid": 1, "device": 0, "stream": stream,
               "start_ns": T0 + s * US, "end_ns": T0 + e * US,
               "correlation": corr}
        if name:
            rec.update(type="gpu_kernel", name=name)
        else:
            rec.update(type="h2d_copy", bytes=1 << 20)
        out.append(rec)


def rand(out, seed, expected):
    rng = random.Random(seed)
    ops = []
    for _ in range(400):
        stream = rng.choice([3, 5, 7, 9])
        s = rng.randrange(0, 20_000)
        e = s + rng.choice([0, 1, rng.randrange(1, 400)])
        ops.append((s, e, stream, rng.random() < 0.3))
    ops.sort()
    for i, (s, e, stream, copy) in enumerate(ops):
        rec = {"pid": 1, "device": 0, "stream": stream,
               "start_ns": T0 + s * US, "end_ns": T0 + e * US,
               "correlation": i + 1}
        if copy:
            rec.update(type="d2h_copy", bytes=4096)
        else:
            rec.update(type="gpu_kernel", name="k%d" % (i % 5))
        out.append(rec)
    # microsecond by microsecond
    end = max(e for _, e, _, _ in ops)
    k = [0] * end
    c = [0] * end
    per = {st: [0] * end for st in (3, 5, 7, 9)}
    for s, e, stream, copy in ops:
        for u in range(s, e):
            (c if copy else k)[u] += 1
            per[stream][u] += 1
    nst = [sum(1 for st in per if per[st][u]) for u in range(end)]
    x = {"kernel_ns": sum(1 for v in k if v) * US,
         "copy_ns": sum(1 for v in c if v) * US,
         "copy_under_kernels_ns": sum(1 for u in range(end)
                                      if k[u] and c[u]) * US,
         "max_concurrent_kernels": 0,
         "concurrent_kernels_ns": sum(1 for v in k if v > 1) * US,
         "multi_stream_ns": sum(1 for v in nst if v > 1) * US,
         "streams": {str(st): [sum(1 for v in per[st] if v) * US,
                               sum(1 for u in range(end)
                                   if per[st][u] and nst[u] > 1) * US]
                     for st in per}}
    # the most kernels at once: those with s <= t < e at an instant t (a
    # kernel of no length runs at no instant)
    x["max_concurrent_kernels"] = max(
        sum(1 for s, e, _, cp in ops if not cp and s <= t < e)
        for t, _, _, _ in ops)
    with open(expected, "w") as f:
        json.dump(x, f)


def main():
    out = []
    if sys.argv[1] == "hand":
        hand(out)
    else:
        rand(out, int(sys.argv[2]), sys.argv[3])
    for r in out:
        print(json.dumps(r))


main()
