#!/usr/bin/env python3
"""steps_gen.py SCENARIO: a synthetic trace (formats/jsonl.md) whose steps,
critical path and what-if savings can be worked out by hand.

overlap: 100 steps (scope 'step') of 5 ms of host preprocessing, then two
  1 ms kernels launched back to back and a device sync that waits for them:
  7 ms a step; overlapping the host work makes it max(5, 2) = 5 ms.
sync: 500 steps (function app.step) of a 400 us kernel, a device sync that
  blocks 402 us, then 250 us of host work: deferring the sync to the step's
  end lets the host work run under the kernel, 250 us a step.
lead_change: 3000 calls of app.warm (1 ms, 10 calls of app.inner each),
  then 10000 of app.step (3 ms, the same): app.warm leads the steps'
  candidates for the first 33k events, app.step from about 45k on (for
  the second reading read beside the first, lib/analyze/ahead.c).
sync_many: sync with 12000 steps (60k events).
pool: a multiprocessing.Pool imap loop: the main process's app.consume,
  40 x 2 ms; a worker process's library loop (multiprocessing.pool.worker)
  runs app.tok 20 x 1 ms, each result sent by the library's
  SimpleQueue.put, 5 ms (20 x 5 = 100 ms, more than consume's 80).
pool_held: pool, but put pickles objects of the program's: each put runs
  app.Item.__reduce__ (1 ms of its 5).
thread_start: three threading.Thread.start calls of 20 ms in a row on the
  main thread, each 8 ms in _thread.start_new_thread, 1.9 ms in its own
  Python code, then 10 ms in Event.wait (lock.acquire 9.96 ms), while the
  threads it starts run app.spin 300 ms; the main thread's CPU readings
  (thread.cpu_ns, as the collector reads them at a call or return 1 ms or
  more after the last) say it ran 0.1 ms a start: off a CPU outside the
  wait (a loaded machine's run queue, the GIL the spinning threads hold).
thread_start_busy: thread_start, the readings saying it ran all but its
  wait (8 ms creating the thread, 1.9 ms of Python).
lib_preempted: a module's loop of 10 json.loads calls of 5 ms, each after
  5 ms of the module's own code, on a thread the machine ran half the time
  (its CPU readings every 10 ms, 5 ms more each).
"""
import json
import sys


def overlap(out):
    t, corr = 1_000_000, 1
    out.append({"type": "thread", "pid": 1, "tid": 1, "name": "MainThread"})
    for _ in range(100):
        s = t
        out.append({"type": "scope", "pid": 1, "tid": 1, "name": "step",
                    "start_ns": s, "end_ns": s + 7_000_000})
        out.append({"type": "cpu_call", "pid": 1, "tid": 1,
                    "name": "app.preprocess", "file": "app.py", "line": 3,
                    "start_ns": s, "end_ns": s + 5_000_000})
        a = s + 5_000_000
        for k in range(2):
            out.append({"type": "cuda_api", "pid": 1, "tid": 1,
                        "name": "cudaLaunchKernel", "start_ns": a,
                        "end_ns": a + 5_000, "correlation": corr})
            ks = s + 5_010_000 + k * 995_000
            out.append({"type": "gpu_kernel", "pid": 1, "device": 0,
                        "stream": 7, "name": "gemm", "start_ns": ks,
                        "end_ns": ks + 995_000, "correlation": corr})
            corr += 1
            a += 5_000
        out.append({"type": "cuda_api", "pid": 1, "tid": 1,
                    "name": "cudaDeviceSynchronize", "start_ns": a,
                    "end_ns": s + 7_000_000, "correlation": corr})
        corr += 1
        t += 7_000_000


def sync(out, steps=500):
    t, corr = 1_000_000, 1
    for _ in range(steps):
        s = t
        out.append({"type": "cpu_call", "pid": 1, "tid": 1,
                    "name": "app.step", "file": "app.py", "line": 10,
                    "start_ns": s, "end_ns": s + 655_000})
        out.append({"type": "cuda_api", "pid": 1, "tid": 1,
                    "name": "cudaLaunchKernel", "start_ns": s,
                    "end_ns": s + 3_000, "correlation": corr})
        out.append({"type": "gpu_kernel", "pid": 1, "device": 0,
                    "stream": 7, "name": "conv", "start_ns": s + 5_000,
                    "end_ns": s + 405_000, "correlation": corr})
        out.append({"type": "cuda_api", "pid": 1, "tid": 1,
                    "name": "cudaDeviceSynchronize", "start_ns": s + 3_000,
                    "end_ns": s + 405_000, "correlation": corr + 1})
        out.append({"type": "cpu_call", "pid": 1, "tid": 1,
                    "name": "app.postprocess", "file": "app.py", "line": 20,
                    "start_ns": s + 405_000, "end_ns": s + 655_000})
        corr += 2
        t += 655_000


def lead_change(out):
    t = 1_000_000
    for name, n, length in (("app.warm", 3000, 1_000_000),
                            ("app.step", 10000, 3_000_000)):
        for _ in range(n):
            out.append({"type": "cpu_call", "pid": 1, "tid": 1,
                        "name": name, "file": "app.py", "line": 1,
                        "start_ns": t, "end_ns": t + length})
            for k in range(10):
                s = t + k * (length // 10)
                out.append({"type": "cpu_call", "pid": 1, "tid": 1,
                            "name": "app.inner", "file": "app.py",
                            "line": 2, "start_ns": s,
                            "end_ns": s + length // 20})
            t += length


def sync_many(out):
    sync(out, 12000)


def pool(out, held=False):
    lib = "/usr/lib/python3.11/multiprocessing/"

    def call(pid, name, where, s, length):
        out.append({"type": "cpu_call", "pid": pid, "tid": pid, "name": name,
                    "file": where[0], "line": where[1], "start_ns": s,
                    "end_ns": s + length})
    for pid in (1, 2):
        out.append({"type": "thread", "pid": pid, "tid": pid,
                    "name": "MainThread"})
    for i in range(40):
        call(1, "app.consume", ("app.py", 5), 1_000_000 + i * 3_000_000,
             2_000_000)
    call(2, "multiprocessing.pool.worker", (lib + "pool.py", 97), 500_000,
         20 * 6_000_000)
    for i in range(20):
        s = 500_000 + i * 6_000_000
        call(2, "app.tok", ("app.py", 2), s, 1_000_000)
        call(2, "multiprocessing.queues.SimpleQueue.put",
             (lib + "queues.py", 370), s + 1_000_000, 5_000_000)
        if held:
            call(2, "app.Item.__reduce__", ("app.py", 9), s + 1_100_000,
                 1_000_000)


def thread_start(out, busy=False):
    lib = "/usr/lib/python3.11/threading.py"

    def call(tid, name, s, length, line=None):
        r = {"type": "cpu_call", "pid": 1, "tid": tid, "name": name,
             "start_ns": s, "end_ns": s + length}
        if line:
            r["file"] = "app.py" if name.startswith("app.") else lib
            r["line"] = line
        out.append(r)

    def cpu(ts, v):
        out.append({"type": "counter", "pid": 1, "tid": 1,
                    "name": "thread.cpu_ns", "ts_ns": ts, "value": v})
    for tid in (1, 2, 3, 4):
        out.append({"type": "thread", "pid": 1, "tid": tid,
                    "name": "MainThread" if tid == 1 else "Thread-%d" %
                    (tid - 1)})
    v = 50_000_000
    for i in range(3):
        s = 1_000_000 + i * 20_100_000
        call(1, "threading.Thread.start", s, 20_000_000, 945)
        call(1, "_thread.start_new_thread", s + 10_000, 7_990_000)
        call(1, "threading.Event.wait", s + 9_900_000, 10_050_000, 604)
        call(1, "threading.Condition.wait", s + 9_920_000, 10_010_000, 320)
        call(1, "_thread.lock.acquire", s + 9_940_000, 9_960_000)
        call(2 + i, "app.spin", s + 8_000_000, 300_000_000, 2)
        # on a CPU: 30 us of the 8 ms, 20 of the 1.9, 10 of the wait's
        # 10, 40 of the last 0.1 (busy: all but the lock's wait)
        for dt, ran in ((0, 0), (8_000_000, 7_990_000 if busy else 30_000),
                        (9_900_000, 1_900_000 if busy else 20_000),
                        (19_900_000, 10_000), (20_000_000, 40_000)):
            v += ran
            cpu(s + dt, v)


def lib_preempted(out):
    out.append({"type": "thread", "pid": 1, "tid": 1, "name": "MainThread"})
    out.append({"type": "cpu_call", "pid": 1, "tid": 1,
                "name": "__main__.<module>", "file": "app.py", "line": 1,
                "start_ns": 500_000, "end_ns": 102_000_000})
    for i in range(11):
        s = 1_000_000 + i * 10_000_000
        out.append({"type": "counter", "pid": 1, "tid": 1,
                    "name": "thread.cpu_ns", "ts_ns": s,
                    "value": 40_000_000 + i * 5_000_000})
        if i < 10:
            out.append({"type": "cpu_call", "pid": 1, "tid": 1,
                        "name": "json.loads",
                        "file": "/usr/lib/python3.11/json/__init__.py",
                        "line": 299, "start_ns": s + 5_000_000,
                        "end_ns": s + 10_000_000})


out = []
{"overlap": overlap, "sync": sync, "lead_change": lead_change,
 "sync_many": sync_many, "pool": pool,
 "pool_held": lambda out: pool(out, True),
 "thread_start": thread_start,
 "thread_start_busy": lambda out: thread_start(out, True),
 "lib_preempted": lib_preempted}[sys.argv[1]](out)
out.sort(key=lambda r: r.get("start_ns", r.get("ts_ns", 0)))
print(json.dumps({"type": "header", "format": "inferscope-trace",
                  "version": [1, 2], "producer": "steps_gen.py"}))
for r in out:
    print(json.dumps(r))
