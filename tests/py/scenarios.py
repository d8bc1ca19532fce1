#!/usr/bin/env python3
"""Synthetic traces for is-analyze's rules, as JSON Lines for is-cat --encode.

usage: scenarios.py NAME > trace.jsonl

Every scenario is built so that the numbers the rules report can be worked
out by hand; tests/is-analyze.bats asserts them.  Times are in ns on the
host clock; the trace is already in time order (as is-merge leaves it).
"""
import json
import sys

PID = 100
MAIN = 100
T0 = 1_000_000_000
STEP = 1_000_000


def header():
    return {"type": "header", "format": "inferscope-trace", "version": [1, 0],
            "producer": "scenarios.py", "host": "testhost", "pids": [PID],
            "clocks": ["monotonic"]}


def meta(device=True, link=12.0, mem=80 * 2**30):
    out = [{"type": "process", "pid": PID, "name": "python3",
            "cmdline": ["python3", "app.py"], "host": "testhost"},
           {"type": "thread", "pid": PID, "tid": MAIN, "name": "MainThread"}]
    if device:
        out.append({"type": "device", "device": 0, "name": "Test GPU",
                    "sm_count": 100, "memory_bytes": mem, "pcie_gbps": link})
    return out


def call(name, s, e, tid=MAIN, file=None, line=None):
    ev = {"type": "cpu_call", "pid": PID, "tid": tid, "name": name,
          "start_ns": s, "end_ns": e}
    if file:
        ev["file"] = file
        ev["line"] = line
    return ev


def api(name, s, e, corr, tid=MAIN):
    return {"type": "cuda_api", "pid": PID, "tid": tid, "name": name,
            "start_ns": s, "end_ns": e, "correlation": corr}


def kern(name, s, e, corr):
    return {"type": "gpu_kernel", "pid": PID, "device": 0, "stream": 7,
            "name": name, "start_ns": s, "end_ns": e, "correlation": corr,
            "grid": [64, 1, 1], "block": [256, 1, 1]}


def copy(kind, s, e, nbytes, pageable, corr):
    return {"type": kind, "pid": PID, "device": 0, "stream": 7,
            "bytes": nbytes, "pageable": pageable, "start_ns": s,
            "end_ns": e, "correlation": corr}


def counter(name, ts, value, pid=PID, tid=None):
    ev = {"type": "counter", "pid": pid, "name": name, "ts_ns": ts,
          "value": value}
    if tid is not None:
        ev["tid"] = tid
    return ev


def gpu_steps(kernel_ns, pre_ns=700_000, steps=10):
    """Per step: Python preprocess, a launch, the kernel.

    Step i starts at T0 + i*STEP: app.preprocess [0, pre_ns), the launch
    [pre_ns, pre_ns+10us), the kernel from pre_ns+20us for kernel_ns.
    """
    out = []
    for i in range(steps):
        t = T0 + i * STEP
        out.append(call("app.preprocess", t, t + pre_ns, file="/app/pre.py",
                        line=3))
        out.append(api("cudaLaunchKernel", t + pre_ns, t + pre_ns + 10_000,
                       i + 1))
        out.append(kern("gemm", t + pre_ns + 20_000,
                        t + pre_ns + 20_000 + kernel_ns, i + 1))
    return out


def tkey(e):
    return e.get("start_ns", e.get("ts_ns", 0))


def scenario(name):
    ev = []
    if name == "gpu_idle":
        # kernels 200 us in 1 ms steps: active 9.2 ms, busy 2 ms,
        # idle 7.2 ms = 78.26%; 9 gaps of 800 us: 700 us preprocess,
        # 90 us nothing, 10 us launch call; host wait 780 us + kernel
        # wait 20 us per gap
        ev = meta() + gpu_steps(200_000)
    elif name == "gpu_bound":
        # kernels 975 us: gaps of 5 us, busy 9.75 of 9.795 ms = 99.54%
        ev = meta() + gpu_steps(975_000, pre_ns=700_000)
        for i, e in enumerate(ev):
            if e["type"] == "gpu_kernel":
                n = e["correlation"] - 1
                e["start_ns"] = T0 + n * STEP + 720_000
                e["end_ns"] = e["start_ns"] + 995_000
        # 10 kernels of 995 us: active 9*1ms + 995 us = 9.995 ms,
        # busy 9.95 ms = 99.55%
    elif name in ("transfer", "transfer_ok"):
        big = name == "transfer"
        ev = meta()
        for i in range(10):
            t = T0 + i * STEP
            nbytes, dur = (4 * 2**20, 400_000) if big else (4096, 2_000)
            ev.append(api("cudaMemcpyAsync", t, t + 10_000, 2 * i + 1))
            ev.append(copy("h2d_copy", t + 20_000, t + 20_000 + dur, nbytes,
                           big, 2 * i + 1))
            ev.append(api("cudaLaunchKernel", t + 30_000, t + 40_000,
                          2 * i + 2))
            ev.append(kern("gemm", t + 500_000, t + 700_000, 2 * i + 2))
        # transfer: copies 10 x 400 us = 4 ms, kernels 2 ms, busy 6 ms:
        # 66.67%; 4 MiB / 400 us = 10.486 GB/s = 87% of 12 GB/s
        ev.sort(key=tkey)
    elif name in ("sync", "sync_ok", "sync_gpu_wait"):
        ev = meta()
        for i in range(10):
            t = T0 + i * STEP
            ev.append(call("__main__.step", t, t + 900_000,
                           file="/app/app.py", line=10))
            ev.append(api("cudaLaunchKernel", t + 10_000, t + 20_000, i + 1))
            ev.append(kern("gemm", t + 30_000, t + 230_000, i + 1))
            if name != "sync_ok":
                ev.append(call("Tensor.item", t + 25_000, t + 235_000))
                ev.append({"type": "sync", "pid": PID, "tid": MAIN,
                           "kind": "stream" if name == "sync" else
                           "stream_wait_event", "start_ns": t + 30_000,
                           "end_ns": t + 230_000})
        # sync: 10 x 200 us blocked = 2 ms of a 9.9 ms run: 20.2%
        ev.sort(key=tkey)
    elif name in ("launch", "launch_ok"):
        ev = meta()
        kdur = 4_000 if name == "launch" else 50_000
        t = T0
        for i in range(500):
            slow = name == "launch" and i % 20 == 0   # 25 slow calls: 5%
            adur = 60_000 if slow else 6_000
            ev.append(api("cudaLaunchKernel", t, t + adur, i + 1))
            ev.append(kern("elementwise", t + adur + 10_000,
                           t + adur + 10_000 + kdur, i + 1))
            t += adur + 10_000 + kdur + 2_000
        # launch: 500 kernels of 4 us; every launch starts on an idle
        # GPU (the call begins 2 us after the previous kernel ends)
        ev.sort(key=tkey)
    elif name == "launch_graph":
        # the launch scenario's kernels, replayed by a CUDA graph: 50
        # cudaGraphLaunch calls of 10 nodes each, all of graph 4
        ev = scenario("launch")[1:]
        for e in ev:
            if e["type"] == "gpu_kernel":
                n = e["correlation"] - 1
                e["graph_id"] = 4
                e["graph_node_id"] = n % 10 + 1
                e["correlation"] = n // 10 + 1
            elif e["type"] == "cuda_api":
                n = e["correlation"] - 1
                if n % 10:
                    e["name"] = "cudaStreamGetCaptureInfo"
                e["name"] = "cudaGraphLaunch" if n % 10 == 0 else e["name"]
                e["correlation"] = n // 10 + 1 if n % 10 == 0 else 1000 + n
    elif name in ("gpus_by_uuid", "gpus_same_uuid", "gpus_no_uuid"):
        # two processes, each with its one GPU as device 0 (one GPU per
        # process through CUDA_VISIBLE_DEVICES): process 100 runs 10
        # kernels of 200 us at 1 ms steps, process 200 10 of 500 us,
        # 100 us later.  By UUID: two GPUs, busy 2 ms of 9.2 and 5 ms of
        # 9.5; the same UUID (two processes on one GPU): one GPU with 20
        # kernels, busy 6 ms of 9.6 (their union); no UUID (a 1.0 trace):
        # one device 0, as before
        uu = {"gpus_by_uuid": ("GPU-aaaaaaaa-0000-0000-0000-000000000001",
                               "GPU-bbbbbbbb-0000-0000-0000-000000000002"),
              "gpus_same_uuid": ("GPU-aaaaaaaa-0000-0000-0000-000000000001",
                                 ) * 2,
              "gpus_no_uuid": (None, None)}[name]
        ev = []
        for pid, u in zip((PID, 200), uu):
            ev.append({"type": "process", "pid": pid, "name": "python3"})
            ev.append({"type": "thread", "pid": pid, "tid": pid,
                       "name": "MainThread"})
            d = {"type": "device", "pid": pid, "device": 0,
                 "name": "Test GPU", "sm_count": 100,
                 "memory_bytes": 80 * 2**30, "pcie_gbps": 12.0}
            if u:
                d["uuid"] = u
            ev.append(d)
        # each process's main thread launches its kernels, 50 us before
        for i in range(10):
            for pid, off, dur in ((PID, 0, 200_000), (200, 100_000, 500_000)):
                t = T0 + i * STEP + off
                a = api("cudaLaunchKernel", t - 50_000, t - 40_000, i + 1,
                        tid=pid)
                k = kern("gemm", t, t + dur, i + 1)
                a["pid"] = k["pid"] = pid
                ev += [a, k]
        ev.sort(key=tkey)
    elif name in ("contention", "contention_ok", "contention_box",
                  "contention_unmeasured", "contention_recorder",
                  "contention_recorder_others", "contention_light"):
        # box: the machine's other processes keep procs_running above
        # the cores, but these threads hardly wait (2%); light: they
        # wait 9% (5 ms a tick beside 50 of CPU); unmeasured: no
        # schedstat, the run queue is all there is; recorder: two of the
        # four runnable threads beside the sampler are InferScope's own
        # (the program's two alone fit the cores); recorder_others: one
        # is, and the other is another program's
        ev = meta(device=False)
        wait = 10_000_000 if name in ("contention_ok", "contention_box",
                                      "contention_unmeasured") \
            else 50_000_000 if name == "contention_light" else 500_000_000
        runnable = 2 if name == "contention_ok" else 5
        rec = {"contention_recorder": 2,
               "contention_recorder_others": 1}.get(name)
        ev.append(counter("system.cpu_cores", T0, 2, pid=0))
        for k, tid in enumerate((101, 102, 103, 104)):
            ev.append({"type": "thread", "pid": PID, "tid": tid,
                       "name": "worker-%d" % k})
        for s in range(11):
            ts = T0 + s * 100_000_000
            ev.append(counter("system.runnable", ts, runnable, pid=0))
            if rec is not None:
                ev.append(counter("system.program_runnable", ts, 2, pid=0))
                ev.append(counter("system.recorder_runnable", ts, rec,
                                  pid=0))
            for tid in (101, 102, 103, 104):
                ev.append(counter("thread.cpu_ns", ts, s * 50_000_000,
                                  tid=tid))
                if name != "contention_unmeasured":
                    ev.append(counter("thread.wait_ns", ts,
                                      s * wait // 10, tid=tid))
                ev.append(counter("thread.ctx_involuntary", ts, s * 25,
                                  tid=tid))
        # contention: each thread 0.5 s CPU, 0.5 s waiting: 50%;
        # 11 runnable samples, all over 2 cores; 4 x 250 = 1000 switches
        ev.sort(key=tkey)
    elif name == "contention_pool":
        # a Pool of 4 one-thread workers (pids 201-204) on 2 cores, each
        # 0.5 s CPU and 0.5 s queued over 1 s; the parent (PID) has its
        # main thread, 0.06 s CPU queued 1.2 s behind other programs
        # through its imports, and 3 handler threads of 1 ms each: the
        # parent was runnable 1.263 s, longer than any worker (1 s), but
        # ran 0.063 s to each worker's 0.5
        ev = meta(device=False)
        ev.append(counter("system.cpu_cores", T0, 2, pid=0))
        ths = [(PID, 101, 60_000_000, 1_200_000_000)] + \
            [(PID, 102 + k, 1_000_000, 0) for k in range(3)] + \
            [(201 + k, 201 + k, 500_000_000, 500_000_000) for k in range(4)]
        for pid in (201, 202, 203, 204):
            ev.append({"type": "process", "pid": pid, "name": "python3"})
        for pid, tid, _, _ in ths:
            ev.append({"type": "thread", "pid": pid, "tid": tid,
                       "name": "t%d" % tid})
        for s in range(11):
            ts = T0 + s * 100_000_000
            ev.append(counter("system.runnable", ts, 5, pid=0))
            ev.append(counter("system.program_runnable", ts, 4, pid=0))
            ev.append(counter("system.recorder_runnable", ts, 0, pid=0))
            for pid, tid, c, w in ths:
                ev.append(counter("thread.cpu_ns", ts, s * c // 10,
                                  pid=pid, tid=tid))
                ev.append(counter("thread.wait_ns", ts, s * w // 10,
                                  pid=pid, tid=tid))
        ev.sort(key=tkey)
    elif name in ("gil", "gil_ok"):
        ev = meta(device=False)
        ev.append(counter("system.cpu_cores", T0, 4, pid=0))
        per = 50_000_000 if name == "gil" else 95_000_000
        for tid in (101, 102):
            ev.append({"type": "thread", "pid": PID, "tid": tid,
                       "name": "Thread-%d" % (tid - 100)})
        for tid in (101, 102):
            ev.append(counter("thread.cpu_ns", T0 - 1, 0, tid=tid))
        for tid in (101, 102):
            ev.append(call("__main__.work", T0, T0 + 1_000_000_000, tid=tid,
                           file="/app/gil.py", line=5))
        for s in range(1, 11):
            for tid in (101, 102):
                ev.append(counter("thread.cpu_ns", T0 + s * 100_000_000,
                                  s * per, tid=tid))
        # gil: two threads in Python for 1 s, 0.5 s of CPU each: 1.0 core
        ev.sort(key=tkey)
    elif name in ("memory", "memory_ok"):
        ev = meta()
        mib = 2**20
        ev.append(counter("system.memory_bytes", T0, 1024 * mib, pid=0))
        top = 400 if name == "memory" else 110
        for s in range(11):
            ev.append(counter("process.rss_bytes", T0 + s * 200_000_000,
                              (100 + (top - 100) * s // 10) * mib))
        ev.append(counter("process.major_faults", T0, 10))
        ev.append(counter("process.major_faults", T0 + 2_000_000_000, 1510
                          if name == "memory" else 20))
        gpu = 75 * 2**30 if name == "memory" else 10 * 2**30
        ev.append({"type": "memory_alloc", "pid": PID, "device": 0,
                   "bytes": gpu, "ts_ns": T0 + 1})
        ev.append({"type": "memory_free", "pid": PID, "device": 0,
                   "bytes": gpu, "ts_ns": T0 + 2})
        # memory: 100 -> 400 MiB over 2 s, 30 MiB a sample; 1500 major
        # faults; GPU 75 of 80 GiB = 93.75%
        ev.sort(key=tkey)
    elif name in ("nested", "nested_shared"):
        # as CUPTI reports it: each runtime call with the driver call it
        # makes inside; 10 launches and 10 synchronous copies, each once.
        # nested_shared: the driver calls share the runtime call's
        # correlation, and the copy's is an async one
        ev = meta()
        sh = name == "nested_shared"
        for i in range(10):
            t = T0 + i * STEP
            ev.append(api("cudaLaunchKernel_v7000", t, t + 8_000, 2 * i + 1))
            ev.append(api("cuLaunchKernel", t + 1_000, t + 7_000,
                          2 * i + 1 if sh else 2 * i + 2))
            ev.append(kern("gemm", t + 10_000, t + 110_000, 2 * i + 1))
            ev.append(api("cudaMemcpy_v3020", t + 120_000, t + 300_000,
                          1000 + i))
            ev.append(api("cuMemcpyAsync" if sh else "cuMemcpyDtoH_v2",
                          t + 121_000, t + 299_000,
                          1000 + i if sh else 2000 + i))
            ev.append(copy("d2h_copy", t + 150_000, t + 290_000, 4096, True,
                           1000 + i))
        ev.sort(key=tkey)
    elif name == "gpu_bound_after_load":
        # a model loaded for 20 ms (one 10 us copy at 1 ms, the GPU idle
        # after it), then 10 steps of 1 ms each busy 950 us: the median
        # step 95% busy; the active window 1 ms .. 29.97 ms, 9.51 ms
        # busy of 28.97 ms: 32.83%
        ev = meta()
        ev.append(call("app.load_model", T0, T0 + 20 * STEP,
                       file="/app/app.py", line=5))
        ev.append(api("cudaMemcpyAsync", T0 + STEP - 10_000, T0 + STEP, 1))
        ev.append(copy("h2d_copy", T0 + STEP, T0 + STEP + 10_000, 4096,
                       False, 1))
        for i in range(10):
            t = T0 + 20 * STEP + i * STEP
            ev.append({"type": "scope", "pid": PID, "tid": MAIN,
                       "name": "step", "start_ns": t, "end_ns": t + STEP})
            ev.append(api("cudaLaunchKernel", t + 10_000, t + 15_000, i + 2))
            ev.append(kern("gemm", t + 20_000, t + 970_000, i + 2))
        ev.sort(key=tkey)
    elif name in ("steps", "steps_slow"):
        # scopes for the regression gate: 'step' 10 x 1 ms or 1.1 ms
        ev = meta(device=False)
        d = 1_000_000 if name == "steps" else 1_100_000
        for i in range(10):
            t = T0 + i * 2_000_000
            ev.append({"type": "scope", "pid": PID, "tid": MAIN,
                       "name": "step", "start_ns": t, "end_ns": t + d})
            ev.append({"type": "scope", "pid": PID, "tid": MAIN,
                       "name": "load", "start_ns": t + d,
                       "end_ns": t + d + 500_000})
    elif name in ("startup", "startup_small"):
        # imports on two threads; ms from T0.  startup: the main thread
        # imports numpy [10, 310] (its body [20, 300] imports numpy.core
        # [30, 130], nested: counted once, not listed) and tokenizers
        # [400, 450] (body [405, 445]); thread 101 imports json [500, 520]
        # (body [505, 515]).  The run lasts 1000 ms: main 350 ms = 35%.
        # startup_small: one import of 95 of 100 ms, under the 100 ms floor
        ms = 1_000_000
        imp = "_frozen_importlib._find_and_load"
        boot = "<frozen importlib._bootstrap>"

        def body(mod, s, e, tid=MAIN):
            return call(mod + ".<module>", T0 + s * ms, T0 + e * ms, tid,
                        file="/lib/%s.py" % mod.replace(".", "/"), line=1)

        def find(s, e, tid=MAIN):
            return call(imp, T0 + s * ms, T0 + e * ms, tid, file=boot,
                        line=1165)
        ev = meta(device=False)
        if name == "startup":
            ev.append({"type": "thread", "pid": PID, "tid": 101,
                       "name": "loader"})
            ev += [body("__main__", 0, 1000), find(10, 310),
                   body("numpy", 20, 300), find(30, 130),
                   body("numpy.core", 40, 120), find(400, 450),
                   body("tokenizers", 405, 445), find(500, 520, 101),
                   body("json", 505, 515, 101)]
        else:
            ev += [body("__main__", 0, 100), find(0, 95),
                   body("torch", 1, 94)]
        ev.sort(key=tkey)
    elif name == "gc":
        # the main thread's Python window is 1000 ms (__main__.loop); ten
        # gen-0 collections of 2 ms and one gen-2 of 40 ms [150, 190]
        # inside the scope 'request' [100, 300]: 60 ms = 6% of the window,
        # longest 40 ms = 2x the 20 ms bar.  A gen-2 of 30 ms [30, 60]
        # inside an import [20, 80] is start-up, counted apart
        ms = 1_000_000
        gen = "gc (generation %d)"
        ev = meta(device=False) + [
            call("__main__.loop", T0, T0 + 1000 * ms, file="/app/app.py",
                 line=3),
            {"type": "scope", "pid": PID, "tid": MAIN, "name": "request",
             "start_ns": T0 + 100 * ms, "end_ns": T0 + 300 * ms},
            call(gen % 2, T0 + 150 * ms, T0 + 190 * ms),
            call("_frozen_importlib._find_and_load", T0 + 20 * ms,
                 T0 + 80 * ms, file="<frozen importlib._bootstrap>",
                 line=1165),
            call(gen % 2, T0 + 30 * ms, T0 + 60 * ms)]
        for i in range(10):
            t = T0 + 400 * ms + i * 50 * ms
            ev.append(call(gen % 0, t, t + 2 * ms))
        ev.sort(key=tkey)
    elif name == "recursion":
        # a(10) recursing through b: a(10) b(10) a(9) ... b(1) a(0), each
        # level 1 ms before its call and 1 ms after, 21 levels, 42 ms.
        # Inside the outermost a, before the rest, 100 distinct functions
        # of 1 us each: they rebuild the thread's table of open functions
        # while a is open.  Recursion counts once: a's inclusive time is
        # 42 ms, b's 40 ms; self time a 22 ms less 0.1 ms, b 20 ms
        ev = meta(device=False)

        def level(n, name, s):
            child = "b" if name == "a" else "a"
            e = s + STEP
            if s == T0:
                for i in range(100):
                    ev.append(call("f%d" % i, s + i * 1000,
                                   s + i * 1000 + 1000, file="app.py",
                                   line=i + 1))
            if n > 0 or name == "b":
                e = level(n - 1 if name == "b" else n, child, e)
            e += STEP
            ev.append(call(name, s, e, file="app.py",
                           line=200 if name == "a" else 300))
            return e
        level(10, "a", T0)
        ev.sort(key=lambda e: (tkey(e), -e.get("end_ns", 0)))
    else:
        sys.exit("scenarios.py: unknown scenario '%s'" % name)
    return [header()] + ev


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for e in scenario(sys.argv[1]):
        sys.stdout.write(json.dumps(e, separators=(",", ":")) + "\n")


main()
