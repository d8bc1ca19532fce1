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
import resource, subprocess, sys, time
t = time.monotonic()
subprocess.run([sys.argv[1], "-o", sys.argv[2] + ".m", sys.argv[2]],
               check=True)
t = time.monotonic() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
n = int(sys.argv[3])
print("is-merge  %d events from 8 streams: %.2f s, %.2f M events/s, peak "
      "RSS %.0f MiB (targets: >= 5 M/s, <= 300 MiB)" % (n, t, n / t / 1e6,
                                                        rss))
PY

# is-analyze: the merged 10M-event trace, trace out (to /dev/null) and
# --json; is-info reading the same trace is the peer (decoding alone)
python3 - "$B/bin" "$tmp/streams.ist.m" "$M" <<'PY'
import resource, subprocess, sys, time
b, f, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def timed(args):
    best = None
    for _ in range(3):
        t = time.monotonic()
        subprocess.run(args, stdout=subprocess.DEVNULL, check=True)
        t = time.monotonic() - t
        best = t if best is None or t < best else best
    return best
peer = timed([b + "/is-info", f])
an = timed([b + "/is-analyze", f])
js = timed([b + "/is-analyze", "--json", f])
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print("is-analyze %d events: trace out %.2f s (%.2f M events/s), --json "
      "%.2f s (%.2f M events/s); is-info alone %.2f s: analysis costs "
      "%.2fx reading; peak RSS %.0f MiB (target >= 2 M/s)" % (
          n, an, n / an / 1e6, js, n / js / 1e6, peer, js / peer, rss))
PY
