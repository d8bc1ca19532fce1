#!/bin/sh
# run.sh - make bench: the format benchmark, on one core, then the peak
# memory of the tools reading the 10M-event trace it wrote.
set -eu
B=${1:-build}
N=${BENCH_EVENTS:-10000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pin=
command -v taskset >/dev/null && pin="taskset -c 0"

$pin "$B/bench/bench" -n "$N" -o "$tmp/bench.ist"
echo
ls -l "$tmp/bench.ist" | awk '{ printf "trace file: %d bytes\n", $5 }'
for cmd in "is-info" "is-cat"; do
	python3 - "$B/bin/$cmd" "$tmp/bench.ist" <<'PY'
import resource, subprocess, sys, time
t = time.monotonic()
subprocess.run([sys.argv[1], sys.argv[2]], stdout=subprocess.DEVNULL,
               check=True)
t = time.monotonic() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print("%-8s reads it in %.2f s, peak RSS %.1f MiB (bounded by one frame,"
      " not the trace)" % (sys.argv[1].rsplit("/", 1)[-1], t, rss / 1024))
PY
done

# is-merge: 8 streams (processes) of the realistic mix, concatenated, merged
# into one
# timeline; BENCH_MERGE_EVENTS=100000000 for the big run
M=${BENCH_MERGE_EVENTS:-10000000}
echo
for i in 1 2 3 4 5 6 7 8; do
	$pin "$B/bench/bench" -J -n $((M / 8)) -m realistic -s $i \
	    -o "$tmp/s$i.ist" > /dev/null
	cat "$tmp/s$i.ist" >> "$tmp/streams.ist"
	rm -f "$tmp/s$i.ist"
done
rm -f "$tmp/bench.ist"
TMPDIR=$tmp python3 - "$B/bin/is-merge" "$tmp/streams.ist" "$M" <<'PY'
import os, statistics, subprocess, sys, time
# five runs, their median and spread: one run on this shared VM ranged
# from 1.9 s to 4.7 s on the same day
walls, cpus, rss = [], [], 0
for _ in range(5):
    t = time.monotonic()
    p = subprocess.Popen([sys.argv[1], "-o", sys.argv[2] + ".m",
                          sys.argv[2]])
    _, status, ru = os.wait4(p.pid, 0)
    walls.append(time.monotonic() - t)
    if status != 0:
        sys.exit("is-merge failed")
    cpus.append(ru.ru_utime + ru.ru_stime)
    rss = max(rss, ru.ru_maxrss / 1024)
t, cpu = statistics.median(walls), statistics.median(cpus)
n = int(sys.argv[3])
# is-merge works on two cores: the events per CPU-second say what one
# core does, the wall figure what the machine does
print("is-merge  %d events from 8 streams: %.2f s (%.2f-%.2f; median of "
      "5), %.2f M events/s (%.2f s CPU, %.2f M events/s per core), peak "
      "RSS %.0f MiB (targets: >= 5 M/s, <= 300 MiB)" % (
          n, t, min(walls), max(walls), n / t / 1e6, cpu, n / cpu / 1e6,
          rss))
PY

# is-analyze and is-report on the merged 10M-event trace; is-info reading
# the same trace is the peer (decoding alone).  Each command runs alone so
# that its peak RSS is its own.
python3 - "$B/bin" "$tmp/streams.ist.m" "$M" <<'PY'
import os, subprocess, sys, time
b, f, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def timed(args):
    """best wall time of 3 runs, peak RSS; the Perfetto export's warning
    that the file is too big for the UI said once, not every run"""
    best, rss = None, 0
    for k in range(3):
        t = time.monotonic()
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL if k else None)
        _, status, ru = os.wait4(p.pid, 0)
        t = time.monotonic() - t
        assert status == 0, args
        best = t if best is None or t < best else best
        rss = max(rss, ru.ru_maxrss / 1024)
    return best, rss
peer, prss = timed([b + "/is-info", f])
an, arss = timed([b + "/is-analyze", f])
js, jrss = timed([b + "/is-analyze", "--json", f])
print("is-analyze %d events: --json %.2f s (%.2f M events/s, RSS %.0f MiB); "
      "trace out %.2f s (%.2f M events/s, RSS %.0f MiB); is-info alone "
      "%.2f s: analysis costs %.2fx reading (target >= 2 M/s)" % (
          n, js, n / js / 1e6, jrss, an, n / an / 1e6, arss, peer,
          js / peer))
for fmt in ("md", "html", "perfetto"):
    t, rss = timed([b + "/is-report", "-f", fmt, f])
    print("is-report -f %-8s %d events: %.2f s (%.2f M events/s), peak RSS "
          "%.0f MiB" % (fmt, n, t, n / t / 1e6, rss))
# an analysed trace (is-analyze's output, as inferscope run hands it on):
# is-report renders the analysis it carries; md needs no chart, so it only
# skims the frames for it (of each only its first record decompressed, the
# events neither decompressed nor decoded)
subprocess.run([b + "/is-analyze", "-o", f + ".a", f], check=True)
peer, _ = timed([b + "/is-info", f + ".a"])
t, rss = timed([b + "/is-report", "-f", "md", f + ".a"])
print("is-report -f md of the analysed trace: %.2f s, %.2fx reading it "
      "(is-info %.2f s; target <= 1.2x: no second analysis)" % (
          t, t / peer, peer))
# the Perfetto export as the pipeline makes it: from the analysed trace
t, rss = timed([b + "/is-report", "-f", "perfetto", f + ".a"])
print("is-report -f perfetto of the analysed trace: %.2f s (%.2f M events/s, "
      "target >= 3 M/s), %.2fx reading it" % (t, n / t / 1e6, t / peer))
PY
