"""make check-gpu: examples/torch_gpu_serve.py recorded three ways in
interleaved rounds (untraced, under is-record, under torch.profiler), the
trace held to Kineto's export of the same steps and to the program's own
clock, and the verdicts of a host-bound and a GPU-bound variant.

    python3 tests/gpu/serve_check.py DIR [FIGURES.json]

Runs in DIR; prints every figure, writes them to FIGURES.json too, and
exits 1 naming each check that failed (all are run).
"""
import collections
import json
import os
import statistics
import subprocess
import sys
import time

from gpucheck import PY, ROOT, check, corr, failed, fig

SERVE = os.path.join(ROOT, "examples", "torch_gpu_serve.py")
ROUNDS = int(os.environ.get("IST_GPU_ROUNDS", "3"))
STEPS = int(os.environ.get("IST_GPU_STEPS", "100"))
WARMUP = 10
OPS = ("gpu_kernel", "h2d_copy", "d2h_copy", "d2d_copy", "memset")

def sh(cmd, **kw):
    t = time.time()
    r = subprocess.run(cmd, shell=True, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=240, **kw)
    if r.returncode != 0:
        print(r.stdout[-4000:])
        raise SystemExit("serve_check: '%s' exited %d" % (cmd, r.returncode))
    print("  (%.1f s) %s" % (time.time() - t, cmd), flush=True)
    return r.stdout


def per_step(path):
    d = json.load(open(path))
    return [e - s for s, e in d["steps"]], d["steps"]


def median(xs):
    return statistics.median(xs) if xs else None


# -- overhead: interleaved rounds ------------------------------------------
def overhead():
    modes = {
        "untraced": "%s %s --steps %d --out %%s" % (PY, SERVE, STEPS),
        "is-record": "is-record -o rec%%d.ist -- %s %s --steps %d --out %%s"
                     % (PY, SERVE, STEPS),
        # what torch.profiler records: no Python calls (scopes, NVTX and
        # CUDA only)
        "is-record --no-python-calls": "is-record --no-python-calls "
                     "-o nopy%%d.ist -- %s %s --steps %d --out %%s"
                     % (PY, SERVE, STEPS),
        "torch.profiler": "%s %s --steps %d --profile kineto%%d.json "
                          "--out %%s" % (PY, SERVE, STEPS),
        # its CUDA activity alone: the peer of --no-python-calls
        "torch.profiler CUDA": "%s %s --steps %d --profile-cuda-only "
                               "--profile cuda%%d.json --out %%s"
                               % (PY, SERVE, STEPS),
    }
    meds = {m: [] for m in modes}
    order = list(modes)
    for r in range(ROUNDS):
        for m in order[r % len(order):] + order[:r % len(order)]:
            out = "times-%s-%d.json" % (m.replace(".", "").replace(
                " --", "-").replace(" ", "-"), r)
            cmd = modes[m] % ((r, out) if "%d" in modes[m] else (out,))
            sh(cmd)
            meds[m].append(median(per_step(out)[0][WARMUP:]))
    base = median(meds["untraced"])
    # a shared GPU host slows whole runs (untraced rounds of 2.49, 2.20
    # and 1.24 ms on one H200): interference only adds, so the gate reads
    # each mode's least disturbed round; the medians are reported beside
    floor = min(meds["untraced"])
    res = collections.OrderedDict()
    for m in modes:
        res[m] = {"step_p50_us": round(median(meds[m]) / 1e3, 1),
                  "rounds_us": [round(x / 1e3, 1) for x in meds[m]],
                  "vs_untraced": round(median(meds[m]) / base, 4),
                  "best_vs_untraced": round(min(meds[m]) / floor, 4)}
    fig["overhead"] = res
    ours = min(meds["is-record"]) / floor - 1
    nopy = min(meds["is-record --no-python-calls"]) / floor - 1
    theirs = min(meds["torch.profiler"]) / floor - 1
    cuda = min(meds["torch.profiler CUDA"]) / floor - 1
    print("step time: %s" % json.dumps(res))
    # the targets, reported (every Python call recorded costs
    # what it costs: the tokenizer makes ~2,500 calls a step); only a
    # gross regression fails the check
    fig["overhead_target_met"] = nopy <= 0.03 and nopy <= theirs / 2
    check(nopy <= max(0.10, theirs), "is-record --no-python-calls adds "
          "%.1f%% per step in its best round (torch.profiler %.1f%%, its "
          "CUDA alone %.1f%%; every Python call recorded: %.1f%%)" % (
              100 * nopy, 100 * theirs, 100 * cuda, 100 * ours))
    return ROUNDS - 1


# -- the trace against Kineto and the program's clock ------------------------
def load_trace(ist):
    sh("is-merge %s > m.ist && is-cat m.ist > m.jsonl && "
       "is-analyze --json m.ist > a.json" % ist)
    ev = [json.loads(l) for l in open("m.jsonl")]
    return ev, json.load(open("a.json"))


def within(a, lo, hi):
    return lo <= a < hi


def ours_by_step(ev, steps):
    """Per step: its kernels' names, its copies, its launches' API names."""
    api = {corr(e): e for e in ev if e["type"] == "cuda_api"}
    rows = [{"kernels": [], "copies": []} for _ in steps]
    for e in ev:
        if e["type"] not in OPS or corr(e) not in api:
            continue
        t = api[corr(e)]["start_ns"]
        for i, (s, f) in enumerate(steps):
            if within(t, s, f):
                if e["type"] == "gpu_kernel":
                    rows[i]["kernels"].append(e["name"])
                elif e["type"] != "memset":
                    rows[i]["copies"].append(
                        (e["type"][:3], e["bytes"], bool(e.get("pageable"))))
                break
    return rows


def kineto_by_step(path):
    tr = json.load(open(path))["traceEvents"]
    launch = {}
    for e in tr:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and \
                "correlation" in e.get("args", {}):
            launch[e["args"]["correlation"]] = e["ts"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in tr
                   if e.get("cat") == "user_annotation" and
                   e.get("name") == "step")
    rows = [{"kernels": [], "copies": []} for _ in steps]
    durs = collections.defaultdict(list)
    for e in tr:
        cat = e.get("cat")
        if cat not in ("kernel", "gpu_memcpy"):
            continue
        t = launch.get(e.get("args", {}).get("correlation"))
        if t is None:
            continue
        for i, (s, f) in enumerate(steps):
            if within(t, s, f):
                if cat == "kernel":
                    rows[i]["kernels"].append(e["name"])
                    durs[e["name"]].append(e["dur"] * 1e3)
                else:
                    n = e["name"]
                    d = {"HtoD": "h2d", "DtoH": "d2h", "DtoD": "d2d"}.get(
                        n.split()[1], "?")
                    rows[i]["copies"].append(
                        (d, e["args"].get("bytes"), "Pageable" in n))
                break
    return rows, durs


def compare(last):
    ev, a = load_trace("rec%d.ist" % last)
    prog, spans = per_step("times-is-record-%d.json" % last)
    nvtx = sorted((e["start_ns"], e["end_ns"]) for e in ev
                  if e["type"] == "nvtx_range" and e["name"] == "step")
    check(len(nvtx) == STEPS, "NVTX step ranges: %d of %d" % (
        len(nvtx), STEPS))
    # each range lies inside the program's perf_counter_ns span of its step
    # (the same CLOCK_MONOTONIC): the difference is push/pop's own cost
    inner = [(s0 - p0, p1 - s1) for (s0, s1), (p0, p1) in zip(nvtx, spans)]
    outside = sum(1 for x, y in inner if x < 0 or y < 0)
    slack = sorted(x + y for x, y in inner)
    fig["nvtx"] = {"ranges": len(nvtx), "outside_program_span": outside,
                   "slack_p50_us": round(median(slack) / 1e3, 2),
                   "slack_max_us": round(slack[-1] / 1e3, 2)}
    check(outside == 0, "%d NVTX ranges outside the program's own span of "
          "the step" % outside)
    check(median(slack) < 50e3, "NVTX range vs program step: median "
          "slack %.1f us" % (median(slack) / 1e3))
    # causality: no operation before the call that launched it
    api = {corr(e): e for e in ev if e["type"] == "cuda_api"}
    ops = [e for e in ev if e["type"] in OPS]
    linked = [e for e in ops if corr(e) in api]
    kern = [e for e in ev if e["type"] == "gpu_kernel"]
    unlinked = [e for e in kern if corr(e) not in api]
    lead = [e["start_ns"] - api[corr(e)]["start_ns"] for e in linked]
    early = sum(1 for x in lead if x < 0)
    fig["causality"] = {"ops": len(ops), "linked": len(linked),
                        "kernels_unlinked": len(unlinked),
                        "before_launch": early,
                        "min_launch_to_start_us": round(min(lead) / 1e3, 3),
                        "clock_uncertainty_ns":
                            a["data_quality"]["clock_uncertainty_ns"]}
    check(early == 0, "%d operations start before their launch call "
          "(worst %.3f us)" % (early, min(lead) / 1e3))
    check(not unlinked, "%d of %d kernels have no launch call%s" % (
        len(unlinked), len(kern),
        (": " + unlinked[0]["name"][:80]) if unlinked else ""))
    # the same steps in Kineto's export
    ours = ours_by_step(ev, nvtx)[WARMUP:]
    theirs, kdurs = kineto_by_step("kineto%d.json" % last)
    theirs = theirs[WARMUP:]
    ko = [len(r["kernels"]) for r in ours]
    kt = [len(r["kernels"]) for r in theirs]
    fig["kernels"] = {"per_step_ours": collections.Counter(ko),
                      "per_step_kineto": collections.Counter(kt),
                      "total_ours": sum(ko), "total_kineto": sum(kt)}
    check(ko and kt and median(ko) == median(kt) and sum(ko) == sum(kt),
          "kernels per step: ours %s, Kineto %s" % (
              dict(collections.Counter(ko)), dict(collections.Counter(kt))))
    odurs = collections.defaultdict(list)
    win = (nvtx[WARMUP][0], nvtx[-1][1])
    for e in kern:
        if corr(e) in api and within(api[corr(e)]["start_ns"], *win):
            odurs[e["name"]].append(e["end_ns"] - e["start_ns"])
    rows, worst, missing = [], 0.0, []
    for n in sorted(kdurs):
        if n not in odurs:
            missing.append(n)
            continue
        o, k = median(odurs[n]), median(kdurs[n])
        off = abs(o - k)
        bad = off > max(1000.0, 0.01 * k)
        worst = max(worst, off / max(1000.0, 0.01 * k))
        rows.append({"kernel": n[:90], "ours_p50_ns": o, "kineto_p50_ns": k,
                     "count_ours": len(odurs[n]), "count_kineto":
                         len(kdurs[n]), "within": not bad})
    fig["kernel_durations"] = rows
    fig["kernel_names_not_ours"] = missing[:10]
    check(not missing, "Kineto's kernel names all found in ours (%d "
          "missing%s)" % (len(missing), (": " + missing[0][:90])
                          if missing else ""))
    # run to run, a kernel's median time may move: the 1 us / 1% bound is
    # the issue's; the figure says by how much (1.0 = at the bound)
    fig["kernel_duration_worst_vs_bound"] = round(worst, 3)
    check(worst <= 1.0, "each kernel's median duration within 1 us or 1%% "
          "of Kineto's (worst at %.2f of the bound)" % worst)
    co = collections.Counter(c for r in ours for c in r["copies"])
    ct = collections.Counter(c for r in theirs for c in r["copies"])
    fig["copies"] = {"ours": {str(k): v for k, v in co.items()},
                     "kineto": {str(k): v for k, v in ct.items()}}
    check(co == ct, "copies (direction, bytes, pageable): ours %s, "
          "Kineto %s" % (dict(co), dict(ct)))
    # .item(): a sync on the main thread in every step, named in the
    # analysis by its Python site
    main_tid = next(e["tid"] for e in ev if e["type"] == "nvtx_range")
    sy = [e for e in ev if e["type"] == "sync" and e["tid"] == main_tid]
    with_sync = sum(1 for s, f in nvtx if any(
        s <= y["start_ns"] and y["end_ns"] <= f for y in sy))
    sites = [st["where"] for k in a["syncs"] for st in k.get("sites", [])]
    fig["syncs"] = {"kinds": {k["kind"]: k["count"] for k in a["syncs"]},
                    "steps_with_sync": with_sync, "sites": sites}
    check(with_sync == len(nvtx), "steps with a sync on the main thread: "
          "%d of %d" % (with_sync, len(nvtx)))
    check(any("Tensor.item" in s and "one_step" in s for s in sites),
          "a sync site names Tensor.item in one_step: %s" % sites)
    fig["verdict_default"] = a["verdict"]
    fig["findings_default"] = [(f["rule"], f["kind"], f["title"])
                               for f in a["findings"]]
    titles = " ".join(f["title"] for f in a["findings"])
    check(any(f["rule"] == "transfer" and "pageable" in f["title"]
              for f in a["findings"]), "a pageable-copy finding: %s"
          % titles[:300])
    # no operation outlasts the whole of the next on its stream (CUDA
    # 13.0 gave the first D2D copy 225-415 ms; the collector mends it)
    last, nested = {}, []
    for e in sorted(ops, key=lambda e: e["start_ns"]):
        k = (e["pid"], e["device"], e["stream"])
        p = last.get(k)
        if p and p["end_ns"] > e["end_ns"] and "graph_id" not in p:
            nested.append((p["type"], p["end_ns"] - p["start_ns"]))
        last[k] = e
    clipped = [e["value"] for e in ev if e["type"] == "counter" and
               e["name"] == "cupti.ops_clipped"]
    fig["ops_containing_the_next"] = nested[:5]
    fig["cupti_ops_clipped"] = clipped
    check(not nested, "no GPU operation outlasts the next on its stream: "
          "%s" % nested[:3])


def verdicts():
    sh("is-record -o host.ist -- %s %s --steps 40 --batch 1 "
       "--tokenize-reps 100" % (PY, SERVE))
    sh("is-merge host.ist | is-analyze --json > host.json")
    a = json.load(open("host.json"))
    att = (a["devices"][0].get("idle_attribution") or {}).get("top") or []
    fig["host_bound"] = {"verdict": a["verdict"],
                         "idle_pct": a["devices"][0]["idle_pct"],
                         "idle_attribution": att[:3]}
    check(a["verdict"]["classification"] == "CPU-bound",
          "host-bound variant: %s" % a["verdict"]["classification"])
    st = a.get("steps") or {}
    idle, wall = ((st.get("gpu_idle") or {}).get("p50_ns", 0),
                  (st.get("wall") or {}).get("p50_ns", 1))
    fig["host_bound"]["step_gpu_idle_share"] = round(idle / wall, 3)
    check(idle > 0.5 * wall, "host-bound variant: the GPU idle over half "
          "the median step (%.1f%%)" % (100.0 * idle / wall))
    check(any("tokenize" in (t.get("what") or "") for t in att[:2]),
          "the GPU's idle time goes to the tokenizer: %s" % att[:3])
    sh("is-record -o gpu.ist -- %s %s --steps 20 --batch 64 --seq 512 "
       "--dim 2048 --layers 4 --tokenize-reps 1" % (PY, SERVE))
    sh("is-merge gpu.ist | is-analyze --json > gpu.json")
    a = json.load(open("gpu.json"))
    fig["gpu_bound"] = {"verdict": a["verdict"],
                        "busy_pct": a["devices"][0]["busy_pct"]}
    check(a["verdict"]["classification"] == "GPU-bound",
          "GPU-bound variant: %s (busy %s%%)" % (
              a["verdict"]["classification"], a["devices"][0]["busy_pct"]))
    # .item() waits for each step's GPU work: the sync rule says so
    check(any(f["rule"] == "sync" for f in a["findings"]),
          "GPU-bound variant: a sync finding")


def keep(names):
    """Copies what a later look needs next to the figures."""
    d = os.environ.get("IST_GPU_KEEP")
    if d:
        for n in names:
            if os.path.exists(n):
                subprocess.run(["cp", n, d])


def main():
    os.chdir(sys.argv[1])
    out = sys.argv[2] if len(sys.argv) > 2 else None

    def attempt(part, *args):
        """A part that breaks is a failed check; the others still run."""
        try:
            return part(*args)
        except Exception as e:
            import traceback
            traceback.print_exc()
            check(False, "%s: %r" % (part.__name__, e))
            return None

    try:
        last = attempt(overhead)
        attempt(compare, last if last is not None else 0)
        attempt(verdicts)
    finally:
        if out:
            with open(out, "w") as f:
                json.dump(fig, f, indent=1, default=str)
    keep(["host.ist", "host.json", "gpu.json", "a.json"])
    print(json.dumps(fig, indent=1, default=str))
    if failed:
        print("serve_check: %d failed:\n  %s" % (len(failed),
              "\n  ".join(failed)))
        sys.exit(1)


if __name__ == "__main__":
    main()
