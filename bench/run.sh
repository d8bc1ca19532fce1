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
