#!/usr/bin/env python3
"""overhead.py - is-record's overhead against peers, measured in one run.

usage: overhead.py BUILD_DIR [--repeat N] [--no-callgrind] [--quick]

For each workload: wall time untraced, under is-record (default settings),
and under the peer (cProfile, or torch.profiler with CPU activities); the
median of N runs each, and the ratio to untraced.  For the call-heavy
workload, also instructions counted by valgrind's callgrind (stable on a
noisy machine).  BLAS and torch are pinned to one thread.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ENV = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
           MKL_NUM_THREADS="1", PYTHONHASHSEED="0")


def timed(cmd, env=ENV):
    t = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def rounds(runs, n, tmp=None):
    """The wall times of each (cmd, env) of runs over n rounds, one run of
    each per round: the VM's drift (its neighbours, its clock speed)
    falls on all of them alike.  With tmp, the times the workload itself
    reports for its loop (start-up such as `import torch` left out)."""
    walls = [[] for _ in runs]
    files = [os.path.join(tmp, "loop%d.txt" % i)
             for i in range(len(runs))] if tmp else []
    for f in files:
        if os.path.exists(f):
            os.unlink(f)
    for _ in range(n):
        for i, (cmd, env) in enumerate(runs):
            # each run writes a new file, the last round's deleted first,
            # untimed: replacing it would free its blocks in the run (5 ms
            # for fib(30)'s trace on this VM's ext4, mounted discard)
            out = cmd[cmd.index("-o") + 1] if "-o" in cmd else None
            if out and os.path.exists(out):
                os.unlink(out)
            walls[i].append(timed(cmd, dict(env, BENCH_LOOP_TIME=files[i])
                                  if tmp else env))
    if not tmp:
        return walls
    out = []
    for f in files:
        with open(f) as fh:
            out.append([float(x) for x in fh.read().split()])
    return out


def interleaved(runs, n, tmp=None):
    """The median of each run's times over n interleaved rounds."""
    return [statistics.median(w) for w in rounds(runs, n, tmp)]


def ratio(base, other):
    """other / base round by round: the median and the spread (min-max),
    as the README quotes them."""
    r = [b / a for a, b in zip(base, other)]
    return "%5.2f (%.2f-%.2f)" % (statistics.median(r), min(r), max(r))


def callgrind(cmd, env):
    """Instructions cmd runs, or None where valgrind cannot run it (torch's
    AVX-512 kernels on a CPU that has it: valgrind stops at SIGILL)."""
    r = subprocess.run(["valgrind", "--tool=callgrind",
                        "--callgrind-out-file=/dev/null"] + cmd, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True)
    m = re.search(r"Collected : (\d+)", r.stderr)
    return int(m.group(1)) if m and r.returncode == 0 else None


def have(py, mod):
    return subprocess.run([py, "-c", "import " + mod],
                          stderr=subprocess.DEVNULL).returncode == 0


def main():
    build = os.path.abspath(sys.argv[1])
    n = 5
    use_cg = "--no-callgrind" not in sys.argv
    quick = "--quick" in sys.argv
    if "--repeat" in sys.argv:
        n = int(sys.argv[sys.argv.index("--repeat") + 1])
    rec = os.path.join(build, "bin", "is-record")
    info = os.path.join(build, "bin", "is-info")
    tmp = tempfile.mkdtemp()
    trace = os.path.join(tmp, "t.ist")
    # every Python the collector is built for: Debian's 3.11, pyenv's others
    pys = []
    for v in ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13"):
        if v == "3.11":
            pys.append((v, "/usr/bin/python3"))
            continue
        cands = sorted(d for d in os.listdir(os.path.expanduser(
            "~/.pyenv/versions")) if d.startswith(v + ".")) if os.path.isdir(
            os.path.expanduser("~/.pyenv/versions")) else []
        if cands:
            pys.append((v, os.path.expanduser("~/.pyenv/versions/%s/bin/"
                                              "python3" % cands[-1])))
    work = [("fib", "fib.py", ["30" if not quick else "22"], "cProfile")]
    work.append(("numpy-mlp", "mlp.py", ["3000" if not quick else "300"],
                 "cProfile"))
    work.append(("torch-encoder", "encoder.py",
                 ["60" if not quick else "10"], "torch.profiler"))
    print("Python collector overhead: median of %d interleaved runs, wall "
          "time; ratio = traced / untraced, round by round: median (min-max)" % n)
    print("%-14s %-5s %8s %8s %17s %-15s %8s %17s %9s %7s %8s" % (
        "workload", "py", "plain s", "ours s", "ratio (min-max)", "peer",
        "peer s", "ratio (min-max)", "events", "B/ev", "Mev/s"))
    for name, script, args, peer in work:
        for ver, py in pys:
            if name == "numpy-mlp" and not have(py, "numpy"):
                continue
            if name == "torch-encoder" and (ver != "3.11" or
                                            not have(py, "torch")):
                continue
            path = os.path.join(HERE, "workloads", script)
            if peer == "cProfile":
                pcmd = [py, "-m", "cProfile", "-o",
                        os.path.join(tmp, "p.prof"), path] + args
                penv = ENV
            else:
                pcmd = [py, path] + args
                penv = dict(ENV, BENCH_TORCH_PROFILER="1")
            runs = [([py, path] + args, ENV),
                    ([rec, "-o", trace, "--", py, path] + args, ENV),
                    (pcmd, penv)]
            # is-record with the collector's floors (make floors):
            # callbacks that return at once, and that read the clock
            # (3.12+, and Debian's 3.11, the profile hook's)
            floors = [os.path.join(build, "floor%d" % k) for k in (1, 2)]
            floors = [f for f in floors if any(
                x.startswith("_inferscope.cpython-%s%s" % tuple(
                    ver.split("."))) for x in (os.listdir(f) if
                                               os.path.isdir(f) else []))]
            for f in floors:
                runs.append(([rec, "-o", os.path.join(tmp, "floor.ist"),
                              "--", py, path] + args,
                             dict(ENV, INFERSCOPE_PYTHON_DIR=f)))
            w = rounds(runs, n)
            plain, ours, peer_t = (statistics.median(x) for x in w[:3])
            st = json.loads(subprocess.run([info, "--json", trace],
                                           capture_output=True, text=True,
                                           check=True).stdout)
            print("%-14s %-5s %8.3f %8.3f %17s %-15s %8.3f %17s %9d "
                  "%7.2f %8.2f" % (name, ver, plain, ours,
                                    ratio(w[0], w[1]), peer, peer_t,
                                    ratio(w[0], w[2]), st["events"],
                                    st["bytes_per_event"] or 0,
                                    st["events"] / ours / 1e6))
            if floors:
                # what is left to us: CPython's dispatch of the events
                # (sys.monitoring's CALL, PY_START, PY_RETURN a call on
                # 3.12+; the profile hook's call and return on 3.11, a
                # frame object made for each Python call) and the clock
                # are paid before our own work; the targets: half the
                # peer's overhead on fib, 1.5x on the MLP
                if name == "fib":
                    target = "half of %s's overhead %.2f" % (
                        peer, 1 + (statistics.median(w[2]) /
                                   statistics.median(w[0]) - 1) / 2)
                elif name == "numpy-mlp":
                    target = "target 1.50"
                else:
                    target = "target: the process +3% in instructions"
                print("%-14s %-5s floors, is-record with callbacks that "
                      "return at once %s, that read the clock %s; %s" % (
                          "", ver, ratio(w[0], w[3]).strip(),
                          ratio(w[0], w[4]).strip() if len(w) > 4 else
                          "n/a", target))
            sys.stdout.flush()
            if name == "torch-encoder":
                w = rounds(runs[:3], n, tmp)
                lp, lo, lt = (statistics.median(x) for x in w)
                print("%-14s %-5s %8.3f %8.3f %17s %-15s %8.3f %17s "
                      "(the inference loop alone)" % (
                          name, ver, lp, lo, ratio(w[0], w[1]), peer, lt,
                          ratio(w[0], w[2])))
    # the Python API when not recording
    api = os.path.join(build, "python")
    for stmt, setup in (("with scope('x'): pass", ""),
                        ("mark_event('x')", ""),
                        ("with s: pass", "s = scope('x')")):
        r = subprocess.run(["/usr/bin/python3", "-m", "timeit", "-s",
                            "from inferscope import scope, mark_event; " +
                            setup, stmt], env=dict(ENV, PYTHONPATH=api),
                           capture_output=True, text=True, check=True)
        print("API not recording: %-24s %s" % (stmt, r.stdout.split(": ")
                                                [-1].strip()))
    # what recording adds to a process's start and end, program aside:
    # is-record's own (fork, exec, gathering the streams) and the
    # bootstrap's in the recorded Python (the collector, its thread)
    print("\nstart-up and exit, `python -c pass`: median of %d interleaved "
          "rounds" % max(n, 15))
    for ver, py in pys:
        w = rounds([([py, "-c", "pass"], ENV),
                    ([rec, "--no-sample", "-o", trace, "--", py, "-c",
                      "pass"], ENV)], max(n, 15))
        plain, ours = (statistics.median(x) * 1e3 for x in w)
        print("  %-5s untraced %5.1f ms   is-record %5.1f ms (+%.1f ms)" %
              (ver, plain, ours, ours - plain))
    if use_cg and shutil.which("valgrind"):
        # instructions per fib call: fib(20) minus fib(0), so that start-up
        # is left out; both threads of ours counted (the writer thread
        # encodes and compresses, which cProfile, an aggregator, never does).
        # Each run sleeps 0.1 s first (fib.py's settle): a program that
        # ends at once stops the writer thread before it starts, and its
        # buffers are never made; callgrind ran a third of the fib(0) runs
        # so, 4.2 M instructions fewer, which counted as 192 more a call
        # callgrind counts each byte a `rep movsb` copies as an
        # instruction, and glibc's memcpy copies 2 KiB and more with it:
        # the stored frames' three copies inside zstd counted about 55 a
        # call (a CPU retires one such instruction, or a few).  Every peer
        # is counted with glibc's vector copy instead, a few instructions
        # per 32 bytes; ours as valgrind counts the default copy is shown
        # beside it
        vec = "glibc.cpu.x86_rep_movsb_threshold=1000000000"
        print("\ninstructions per call (callgrind, fib(20) - fib(0), "
              "21891 calls; memcpy's vector loop, not rep movsb counted "
              "per byte)")
        path = os.path.join(HERE, "workloads", "fib.py")
        for ver, py in pys:
            d = tempfile.mkdtemp(dir=tmp)
            venv = dict(ENV, GLIBC_TUNABLES=vec)
            oenv = dict(venv, INFERSCOPE_ENABLED="1", INFERSCOPE_DIR=d,
                        PYTHONPATH=os.path.join(build, "python"))
            renv = dict(oenv)
            del renv["GLIBC_TUNABLES"]
            prof = [py, "-m", "cProfile", "-o", os.path.join(tmp, "p.prof")]
            per = []
            for cmd, env in (([py], venv), ([py], oenv), (prof, venv),
                             ([py], renv)):
                a = callgrind(cmd + [path, "0", "settle"], env)
                b = callgrind(cmd + [path, "20", "settle"], env)
                per.append((b - a) / 21891 if a and b else float("nan"))
            rep = per.pop()
            # the stored frames compressed by is-record after the run
            # (is-record --recover gathers a recording as a run's end does)
            gather = []
            for arg in ("0", "20"):
                g = tempfile.mkdtemp(dir=tmp)
                subprocess.run([py, path, arg, "settle"],
                               env=dict(oenv, INFERSCOPE_DIR=g),
                               stdout=subprocess.DEVNULL, check=True)
                dead = subprocess.Popen(["true"])
                dead.wait()
                with open(os.path.join(g, "is-record.pid"), "w") as f:
                    f.write("%d\n" % dead.pid)
                gather.append(callgrind([os.path.join(build, "bin",
                                                      "is-record"),
                                         "--recover", g, "-o",
                                         os.path.join(tmp, "g.ist")], venv))
            per.append((gather[1] - gather[0]) / 21891 if None not in gather
                       else float("nan"))
            print("  %-5s untraced %6.0f   ours %6.0f (%.2fx; %.0f with rep "
                  "movsb per byte)   cProfile %6.0f (%.2fx)   is-record "
                  "after the run %4.0f" %
                  (ver, per[0], per[1], per[1] / per[0], rep, per[2],
                   per[2] / per[0], per[3]))
        # the torch loop: 25 iterations minus 5, start-up left out
        if not quick and have("/usr/bin/python3", "torch"):
            path = os.path.join(HERE, "workloads", "encoder.py")
            d = tempfile.mkdtemp(dir=tmp)
            oenv = dict(ENV, INFERSCOPE_ENABLED="1", INFERSCOPE_DIR=d,
                        PYTHONPATH=os.path.join(build, "python"))
            per, whole = [], []
            for env in (ENV, oenv):
                a = callgrind(["/usr/bin/python3", path, "5"], env)
                b = callgrind(["/usr/bin/python3", path, "25"], env)
                per.append((b - a) / 20 if a and b else None)
                whole.append(b)
            if None in per:
                print("  torch-encoder loop: n/a (valgrind cannot run "
                      "torch on this CPU)")
            else:
                print("  torch-encoder loop, instructions per iteration: "
                      "untraced %.0f, ours %.0f (%.3fx)" % (
                          per[0], per[1], per[1] / per[0]))
                # the figure: the whole process, import torch
                # included (target: within +3%)
                print("  torch-encoder whole process (import torch and 25 "
                      "iterations), instructions: untraced %.4g, ours %.4g "
                      "(%.3fx)" % (whole[0], whole[1], whole[1] / whole[0]))
                # the whole process's peers: cProfile, and what CPython's
                # profile hook costs with a callback that returns at once
                # (make floors), paid by any profiler that sees every call
                floor = os.path.join(build, "floor1")
                peers = [callgrind(["/usr/bin/python3", "-m", "cProfile",
                                    "-o", os.path.join(tmp, "p.prof"), path,
                                    "25"], ENV)]
                peers.append(callgrind(["/usr/bin/python3", path, "25"],
                                       dict(oenv, PYTHONPATH=floor))
                             if os.path.isdir(floor) else None)
                print("    peers: cProfile %s; the profile hook's dispatch "
                      "alone (floor1: a callback that returns at once) %s" %
                      tuple("%.4g (%.3fx)" % (x, x / whole[0]) if x else
                            "n/a" for x in peers))
    # the modes on the three newest: what they cost differs little by Python
    capture_modes(build, pys[-3:], n, use_cg, quick, tmp)
    python_read(build, quick, tmp)
    shutil.rmtree(tmp)


def python_read(build, quick, tmp):
    """inferscope.read() against json.loads over is-cat's output of the
    same trace (a recording of fib), records per second, best of 3."""
    rec = os.path.join(build, "bin", "is-record")
    merge = os.path.join(build, "bin", "is-merge")
    cat = os.path.join(build, "bin", "is-cat")
    raw, trace = os.path.join(tmp, "f.ist"), os.path.join(tmp, "fm.ist")
    subprocess.run([rec, "-o", raw, "--", "/usr/bin/python3",
                    os.path.join(HERE, "workloads", "fib.py"),
                    "22" if quick else "27"], env=ENV, check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([merge, "-o", trace, raw], check=True)
    code = """
import json, subprocess, sys, time, inferscope
import pandas as pd
out = subprocess.run([sys.argv[2], sys.argv[1]], check=True,
                     capture_output=True).stdout.splitlines()
calls = [l for l in out if l.startswith(b'{"type":"cpu_call"')]
best = [0] * 4
for _ in range(3):
    t = time.perf_counter()
    n = sum(1 for _ in inferscope.read(sys.argv[1]))
    best[0] = max(best[0], n / (time.perf_counter() - t))
    t = time.perf_counter()
    m = sum(1 for l in out if json.loads(l))
    best[1] = max(best[1], m / (time.perf_counter() - t))
    t = time.perf_counter()
    rows = len(inferscope.dataframe(sys.argv[1], "cpu_call"))
    best[2] = max(best[2], rows / (time.perf_counter() - t))
    t = time.perf_counter()
    rows2 = len(pd.DataFrame([json.loads(l) for l in calls]))
    best[3] = max(best[3], rows2 / (time.perf_counter() - t))
    t = time.perf_counter()
    subprocess.run([sys.argv[3], sys.argv[1]], check=True,
                   stdout=subprocess.DEVNULL)
    best.append(n / (time.perf_counter() - t))
print("%d records: read() %.2f M/s, json.loads of is-cat %.2f M/s" % (
    n, best[0] / 1e6, best[1] / 1e6))
print("%d cpu_call rows: dataframe() %.2f M rows/s, pandas.DataFrame of "
      "json.loads of is-cat %.2f M rows/s; is-info reads the trace at "
      "%.2f M records/s (the reader both share)" % (
          rows, best[2] / 1e6, best[3] / 1e6, max(best[4:]) / 1e6))
"""
    info = os.path.join(build, "bin", "is-info")
    r = subprocess.run(["/usr/bin/python3", "-c", code, trace, cat, info],
                       env=dict(ENV, PYTHONPATH=os.path.join(build, "python")),
                       capture_output=True, text=True, check=True)
    print("\nPython trace reader (3.11):\n  " + r.stdout.strip().replace(
        "\n", "\n  "))
    # what any reader of this trace pays to libcbor, our dependency: the
    # floor under read() and dataframe() on one core
    r = subprocess.run([os.path.join(build, "bench", "bench"), "-F", trace],
                       capture_output=True, text=True, check=True)
    print("  " + r.stdout.strip())


def capture_modes(build, pys, n, use_cg, quick, tmp):
    """What each capture mode of is-record costs on fib: recording, paused
    all along (--capture-range api, no start()), a flight recorder
    (--ring) and one that never dumps (--dump-on api)."""
    rec = os.path.join(build, "bin", "is-record")
    path = os.path.join(HERE, "workloads", "fib.py")
    arg = "22" if quick else "30"
    out = os.path.join(tmp, "m.ist")
    modes = [("recording", []), ("paused", ["--capture-range", "api"]),
             ("--ring", ["--ring"]),
             ("--dump-on api", ["--dump-on", "api", "--log-level", "error"])]
    print("\ncapture modes, fib(%s): median wall of %d interleaved runs, "
          "ratio to untraced" % (arg, n))
    for ver, py in pys:
        runs = [([py, path, arg], ENV)] + [
            ([rec, "-o", out] + m + ["--", py, path, arg], ENV)
            for _, m in modes]
        t = interleaved(runs, n)
        print("  %-5s untraced %6.3f s  " % (ver, t[0]) + "  ".join(
            "%s %.2fx" % (name, x / t[0]) for (name, _), x in
            zip(modes, t[1:])))
        sys.stdout.flush()
    if not (use_cg and shutil.which("valgrind")):
        return
    # instructions per call, paused against untraced: what a program pays
    # outside its capture windows
    print("  instructions per call paused (callgrind, fib(20) - fib(0), "
          "under is-record --capture-range api)")
    for ver, py in pys:
        per = []
        for pre in ([], [rec, "-o", out, "--capture-range", "api", "--"]):
            a = callgrind_under(pre, [py, path, "0", "settle"])
            b = callgrind_under(pre, [py, path, "20", "settle"])
            per.append((b - a) / 21891)
        print("  %-5s untraced %6.0f   paused %6.0f (%.3fx)" % (
            ver, per[0], per[1], per[1] / per[0]))


def callgrind_under(pre, cmd):
    """callgrind's count of cmd, run under the prefix pre (is-record)."""
    r = subprocess.run(pre + ["valgrind", "--tool=callgrind",
                              "--callgrind-out-file=/dev/null"] + cmd,
                       env=ENV, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, check=True)
    m = re.search(r"Collected : (\d+)", r.stderr)
    return int(m.group(1)) if m else None


if __name__ == "__main__":
    main()
