"""make check-gpu: what only a real CUDA driver can show of the CUDA
collector (issue #23's list), one probe a run, each a small torch program
recorded by is-record and held to what the program did.

    python3 tests/gpu/cuda_probes.py DIR PROBE [FIGURES.json]

Prints its figures (and appends them to FIGURES.json's object), exits 1
naming each check that failed.  PROBE: one of PROBES below, or all.
"""
import collections
import json
import os
import shutil
import subprocess
import sys
import textwrap

from gpucheck import PY, check, corr, failed, fig


def record(name, src, rec_args="", expect_rc=0):
    """Runs src under is-record; returns (records, analysis, stderr)."""
    with open(name + ".py", "w") as f:
        f.write(textwrap.dedent(src))
    r = subprocess.run("is-record %s -o %s.ist -- %s %s.py" % (
        rec_args, name, PY, name), shell=True, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, timeout=300)
    print(r.stdout[-2000:], r.stderr[-3000:], sep="\n", flush=True)
    check(r.returncode == expect_rc, "%s: is-record exited %d" % (
        name, r.returncode))
    subprocess.run("is-merge %s.ist > %s.m.ist && is-cat %s.m.ist > "
                   "%s.jsonl; is-analyze --json %s.m.ist > %s.a.json"
                   % ((name,) * 6), shell=True, check=False)
    ev = [json.loads(l) for l in open(name + ".jsonl")]
    try:
        a = json.load(open(name + ".a.json"))
    except ValueError:
        a = {}
    return ev, a, r.stderr


def of(ev, *types):
    return [e for e in ev if e["type"] in types]


def losses(ev):
    c = collections.Counter()
    for e in of(ev, "loss"):
        c[e.get("reason", "")] += e["events"]
    return dict(c)


def linked(ev):
    api = {corr(e): e for e in of(ev, "cuda_api")}
    k = of(ev, "gpu_kernel")
    return api, [e for e in k if corr(e) in api], k


def p_version(d):
    ev, a, err = record("version", """
        import torch
        x = torch.ones(1 << 20, device="cuda")
        (x * 2).sum().item()
        """, "--log-level debug")
    raw = subprocess.run("is-cat version.ist", shell=True, text=True,
                         stdout=subprocess.PIPE).stdout.splitlines()
    prods = [json.loads(l).get("producer", "") for l in raw
             if l.startswith('{"type":"header"')]
    cupti = sorted({p for p in prods if "cupti" in p})
    smi = subprocess.run("nvidia-smi -L", shell=True, text=True,
                         stdout=subprocess.PIPE).stdout
    uuids = sorted({e.get("uuid") for e in of(ev, "device")})
    d.update(producers=cupti, nvidia_smi=smi.strip(), device_uuids=uuids,
             devices=[{k: e.get(k) for k in ("name", "sm_count",
                                             "memory_bytes", "pcie_gbps")}
                      for e in of(ev, "device")],
             cupti_lines=[l for l in err.splitlines() if "cupti" in
                          l.lower() or "CUDA" in l][:10],
             kernels=len(of(ev, "gpu_kernel")))
    check(cupti and "CUPTI API" in cupti[0], "the CUDA stream's producer "
          "names CUPTI's version: %s" % cupti)
    check(uuids and all(u and u in smi for u in uuids),
          "device UUID %s as nvidia-smi -L gives it" % uuids)
    check(len(of(ev, "gpu_kernel")) >= 2, "kernels recorded")


def p_exit_unsynced(d):
    ev, a, err = record("unsynced", """
        import torch
        x = torch.ones(4096, 4096, device="cuda")
        for _ in range(300):
            x = torch.mm(x, x) / 4096
        for _ in range(2000):
            x.add_(1)
        # no synchronize: the work is still queued at exit
        """)
    api, ok, k = linked(ev)
    times = [e for e in of(ev, *("gpu_kernel", "h2d_copy", "d2h_copy",
                                  "memset", "cuda_api", "sync"))
             if e["start_ns"] <= 0 or e["end_ns"] < e["start_ns"]]
    d.update(kernels=len(k), linked=len(ok), losses=losses(ev),
             bad_times_left=len(times))
    check(not times, "no zero or backwards times reach the trace "
          "(%d did)" % len(times))
    check(len(k) + sum(losses(ev).values()) >= 2300,
          "every kernel recorded or counted lost: %d + %s" % (
              len(k), losses(ev)))


def p_query_loop(d):
    ev, a, err = record("query", """
        import torch
        x = torch.ones(4096, 4096, device="cuda")
        polls = 0
        for _ in range(5):
            for _ in range(20):
                x = torch.mm(x, x) / 4096
            e = torch.cuda.Event()
            e.record()
            while not e.query():
                polls += 1
            torch.cuda.current_stream().query()
        torch.cuda.synchronize()
        print("polls", polls)
        """)
    kinds = collections.Counter(e["kind"] for e in of(ev, "sync"))
    apis = collections.Counter(e["name"] for e in of(ev, "cuda_api"))
    d.update(sync_kinds=dict(kinds), api_calls=dict(apis.most_common(12)))
    # CUDA 13 makes the query that finds the work done a sync record (5
    # event and 5 stream syncs here on an H200 before the collector
    # learnt the queries' correlation ids)
    check(kinds.get("event", 0) == 0 and kinds.get("stream", 0) == 0,
          "event and stream queries are no syncs: %s" % dict(kinds))
    check(kinds.get("device", 0) + kinds.get("context", 0) >= 1,
          "torch.cuda.synchronize is a sync: %s" % dict(kinds))


def p_memcpy(d):
    ev, a, err = record("memcpy", """
        import ctypes, torch
        x = torch.randn(1 << 22, device="cuda")
        y = x.cpu()                                 # async + stream sync
        rt = next(l.split()[-1] for l in open("/proc/self/maps")
                  if "libcudart.so" in l)
        cudart = ctypes.CDLL(rt)
        buf = ctypes.create_string_buffer(16 << 20)
        r = cudart.cudaMemcpy(buf, ctypes.c_void_p(x.data_ptr()),
                              ctypes.c_size_t(16 << 20), 2)
        assert r == 0, r
        print("cudaMemcpy done")
        """)
    by = collections.defaultdict(list)
    for e in of(ev, "cuda_api"):
        by[corr(e)].append(e["name"])
    nested = {c: n for c, n in by.items() if len(n) > 1}
    d2h = of(ev, "d2h_copy")
    kinds = {k["kind"]: k["count"] for k in a.get("syncs", [])}
    d.update(nested=list(nested.values())[:5], d2h=[(c["bytes"],
             c.get("pageable")) for c in d2h], sync_kinds=kinds)
    check(any(c["bytes"] == 16 << 20 and c.get("pageable") for c in d2h),
          "cudaMemcpy's 16 MiB pageable D2H copy: %s" % d["d2h"])
    check(kinds.get("memcpy", 0) >= 1, "the synchronous cudaMemcpy counts "
          "as a sync: %s" % kinds)


def p_profiler_inside(d):
    ev, a, err = record("prof", """
        import torch
        from torch.profiler import profile, ProfilerActivity
        x = torch.ones(1 << 20, device="cuda")
        for _ in range(100):
            x.add_(1)                  # before
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU,
                                 ProfilerActivity.CUDA]) as p:
            for _ in range(100):
                x.mul_(1.0001)         # during
            torch.cuda.synchronize()
        for _ in range(100):
            x = torch.sin(x)           # after
        torch.cuda.synchronize()
        print("kineto kernels", sum(1 for e in p.events()
              if e.device_type.name == "CUDA"))
        """)
    k = of(ev, "gpu_kernel")
    phase = collections.Counter(
        "add" if "add" in e["name"].lower() else
        "mul" if "mul" in e["name"].lower() else
        "sin" if "sin" in e["name"].lower() else "other" for e in k)
    api, ok, _ = linked(ev)
    early = sum(1 for e in ok if e["start_ns"] <
                api[corr(e)]["start_ns"])
    d.update(kernels_by_phase=dict(phase), losses=losses(ev),
             before_launch=early, warnings=[l for l in err.splitlines()
                                            if "warning" in l][:5],
             clock_uncertainty_ns=a.get("data_quality", {}).get(
                 "clock_uncertainty_ns"))
    check(phase.get("add", 0) == 100, "the 100 kernels before the "
          "profiler: %s" % dict(phase))
    check(phase.get("sin", 0) == 100 or losses(ev),
          "after torch.profiler stops: the 100 kernels, or a loss that "
          "says so: %s %s" % (dict(phase), losses(ev)))
    check(early == 0, "%d kernels before their launch" % early)


def p_pinned(d):
    ev, a, err = record("pinned", """
        import torch
        h = torch.empty(64 << 20, dtype=torch.uint8).pin_memory()
        g = torch.empty(8 << 20, dtype=torch.uint8, device="cuda")
        g.copy_(h[: 8 << 20], non_blocking=True)
        torch.cuda.synchronize()
        """)
    allocs = [(e["bytes"], e.get("device")) for e in of(ev, "memory_alloc")]
    dev = [x for x in allocs if x[1] is not None]
    peak = [x.get("memory_peak_bytes") for x in a.get("devices", [])]
    d.update(allocs=sorted(allocs)[-6:], device_peak=peak)
    check(not any(b >= 64 << 20 for b, _ in dev),
          "the 64 MiB pinned buffer carries no device: %s" % allocs)
    check(any(b >= 64 << 20 for b, dv in allocs if dv is None) or
          not allocs, "pinned memory recorded as host memory: %s" % allocs)
    check(peak and peak[0] is not None and peak[0] < 64 << 20,
          "the GPU memory peak leaves the pinned buffer out: %s" % peak)


def p_graph(d):
    ev, a, err = record("graph", """
        import torch
        s = torch.cuda.Stream()
        x = torch.ones(1 << 16, device="cuda")
        with torch.cuda.stream(s):
            for _ in range(3):
                y = (x * 2 + 1).relu()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = (x * 2 + 1).relu()
        torch.cuda.synchronize()
        for _ in range(50):
            g.replay()
        torch.cuda.synchronize()
        """)
    api, ok, k = linked(ev)
    gk = [e for e in k if e.get("graph_id") is not None]
    launch = collections.Counter(api[corr(e)]["name"] for e in gk
                                 if corr(e) in api)
    per = collections.Counter(e["correlation"] for e in gk)
    d.update(graph_kernels=len(gk), launched_by=dict(launch),
             kernels_per_replay=dict(collections.Counter(per.values())),
             graph_ops=[x.get("graph_ops") for x in a.get("devices", [])])
    check(len(gk) >= 150 and len(gk) % 50 == 0, "graph kernels: %d over "
          "50 replays" % len(gk))
    check(set(launch) <= {"cudaGraphLaunch", "cuGraphLaunch"} and
          sum(launch.values()) == len(gk),
          "each graph kernel linked to cudaGraphLaunch: %s" % dict(launch))


def p_fork(d):
    ev, a, err = record("fork", """
        import os, torch
        x = torch.ones(1 << 20, device="cuda")
        x.add_(1); torch.cuda.synchronize()
        pid = os.fork()
        if pid == 0:
            sum(range(100000))
            os._exit(7)
        _, st = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(st) == 7
        for _ in range(50):
            x.add_(1)
        torch.cuda.synchronize()
        print("parent done")
        """)
    k = of(ev, "gpu_kernel")
    d.update(kernels=len(k), pids=sorted({e["pid"] for e in k}))
    check(len(k) >= 51, "the parent's kernels around the fork: %d" % len(k))


def p_spawn(d):
    ev, a, err = record("spawn", """
        import multiprocessing as mp, torch
        def child():
            y = torch.ones(1 << 20, device="cuda")
            for _ in range(30):
                y.mul_(1.0001)
            torch.cuda.synchronize()
        if __name__ == "__main__":
            x = torch.ones(1 << 20, device="cuda")
            for _ in range(20):
                x.add_(1)
            torch.cuda.synchronize()
            p = mp.get_context("spawn").Process(target=child)
            p.start(); p.join()
            assert p.exitcode == 0
        """)
    k = of(ev, "gpu_kernel")
    pids = collections.Counter(e["pid"] for e in k)
    devs = a.get("devices", [])
    api, ok, _ = linked(ev)
    early = sum(1 for e in ok if e["start_ns"] <
                api[corr(e)]["start_ns"])
    d.update(kernels_by_pid=list(pids.values()), devices=[
        (x.get("uuid"), x.get("pids")) for x in devs], before_launch=early)
    check(len(pids) == 2, "kernels of both processes: %s" % dict(pids))
    check(len(devs) == 1 and len(devs[0].get("pids") or []) == 2,
          "one GPU, used by both processes: %s" % d["devices"])
    check(early == 0, "%d kernels before their launch" % early)


def p_ring(d):
    # frames filled faster than the collector's clock pairs (one a
    # second): each frame of the flight recorder stands alone, and one
    # without a pair had kept CUPTI's times (the fake CUPTI: 10^18 ns off)
    ev, a, err = record("ring", """
        import time, torch
        x = torch.ones(1024, device="cuda")
        t = time.perf_counter()
        while time.perf_counter() - t < 2.5:
            for _ in range(200):
                x.add_(1)
            torch.cuda.synchronize()
        """, "--ring --trace-size-mb 256")
    host = [e for e in ev if e["type"] in ("cpu_call", "scope")]
    lo = min(e["start_ns"] for e in host)
    hi = max(e["end_ns"] for e in host)
    api, ok, k = linked(ev)
    out = [e for e in of(ev, "gpu_kernel", "cuda_api")
           if not lo - 10**9 <= e["start_ns"] <= hi + 10**9]
    frames = [s for s in of(ev, "header")[0].get("sources", [])
              if "cupti" in (s.get("producer") or "")]
    d.update(kernels=len(k), linked=len(ok), outside=len(out),
             frames=len(frames), pairs=sorted({
                 s["domains"][0]["pairs"] for s in frames
                 if s.get("domains")}))
    check(len(k) >= 20000, "kernels: %d" % len(k))
    check(not out, "%d CUDA records outside the program's span" % len(out))
    check(len(ok) == len(k), "every kernel linked: %d of %d" % (
        len(ok), len(k)))


def p_memory(d):
    # the CUDA collector's own memory (activity buffers, its writer's) is
    # said, and is-analyze leaves it out of the program's
    ev, a, err = record("memory", """
        import threading, time, torch
        def work():
            x = torch.ones(1024, device="cuda")
            for _ in range(20000):
                x.add_(1)
            torch.cuda.synchronize()
        ts = [threading.Thread(target=work) for _ in range(4)]
        for t in ts: t.start()
        for t in ts: t.join()
        time.sleep(1.5)
        """)
    said = [e["value"] for e in ev if e.get("name") ==
            "process.cuda_recorder_bytes"]
    procs = [p for p in a.get("processes", []) if p.get("recorder_peak_bytes")]
    d.update(cuda_said_max=max(said or [0]), says=len(said),
             processes=[{k: p.get(k) for k in (
                 "name", "rss_first_bytes", "rss_peak_bytes",
                 "rss_last_bytes", "recorder_peak_bytes")} for p in procs],
             findings=[f["kind"] for f in a.get("findings", [])])
    check(max(said or [0]) >= 8 << 20, "the CUDA collector said %s" % (
        max(said or [0])))
    check(procs and procs[0]["recorder_peak_bytes"] >= max(said or [0]),
          "the analysis holds it: %s" % d["processes"])


def p_bad_injection(d):
    b = os.environ["IST_BUILD"]
    os.makedirs("bad/bin", exist_ok=True)
    os.makedirs("bad/lib", exist_ok=True)
    shutil.copy(os.path.join(b, "bin", "is-record"), "bad/bin/")
    with open("bad/lib/libinferscope-cupti.so", "w") as f:
        f.write("not a library\n")
    if not os.path.exists("bad/python"):
        os.symlink(os.path.join(b, "python"), "bad/python")
    r = subprocess.run("bad/bin/is-record -o bad.ist -- %s -c 'import torch; "
                       "x = torch.ones(8, device=\"cuda\"); "
                       "print(\"sum\", (x * 2).sum().item())'" % PY,
                       shell=True, text=True, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=300)
    d.update(rc=r.returncode, stdout=r.stdout.strip(),
             stderr=r.stderr.strip()[-400:])
    check(r.returncode == 0 and "sum 16.0" in r.stdout,
          "the program runs when the collector cannot load")
    check("cannot be loaded" in r.stderr, "is-record says why")


PROBES = collections.OrderedDict(
    (f.__name__[2:], f) for f in (
        p_version, p_exit_unsynced, p_query_loop, p_memcpy,
        p_profiler_inside, p_pinned, p_graph, p_fork, p_spawn,
        p_ring, p_memory, p_bad_injection))


def main():
    os.chdir(sys.argv[1])
    names = list(PROBES) if sys.argv[2] == "all" else [sys.argv[2]]
    out = sys.argv[3] if len(sys.argv) > 3 else None
    for n in names:
        d = fig.setdefault(n, collections.OrderedDict())
        try:
            PROBES[n](d)
        except Exception as e:               # the others still run
            import traceback
            traceback.print_exc()
            check(False, "%s: %r" % (n, e))
        print(n, json.dumps(d, default=str), flush=True)
    if out:
        old = {}
        if os.path.exists(out):
            old = json.load(open(out))
        old.update(fig)
        with open(out, "w") as f:
            json.dump(old, f, indent=1, default=str)
    if failed:
        print("cuda_probes: %d failed:\n  %s" % (len(failed),
              "\n  ".join(failed)))
        sys.exit(1)


if __name__ == "__main__":
    main()
