#!/bin/sh
# pipeline.sh - make bench: the whole pipeline on a real recording.
#
# is-record records `python3 -m json.tool` over a generated JSON file
# (BENCH_JSON_MB, 22 MiB: about 45 M Python calls, as the speed issue's
# recording); then is-merge | is-analyze | is-report run on it, through
# pipes as `inferscope run` runs them, against is-info decoding the same
# trace (target: at most 3x), and the Perfetto export in events/s (target:
# at least 3 M/s).  The peer is Python's json.load of the same calls as
# Chrome trace JSON (what HTA and most notebook tools start with): our own
# export of a smaller recording of the same program, loaded whole, in
# events/s.
set -eu
B=${1:-build}
MB=${BENCH_JSON_MB:-22}
PY=${PYTHON_SYS:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# gen FILE KIB: a list of small records, KIB KiB of JSON
gen() {
	python3 - "$1" "$2" <<'PY'
import json, random, sys
random.seed(1)
target, out, size, i = int(sys.argv[2]) << 10, [], 0, 0
while size < target:
    out.append({"id": i, "name": "item%d" % i, "tags": ["a%d" % (i % 7), "b"],
                "score": round(random.random(), 6),
                "nested": {"x": i % 13, "ok": i % 2 == 0}})
    size += 110
    i += 1
with open(sys.argv[1], "w") as f:
    json.dump(out, f)
PY
}

gen "$tmp/big.json" $((MB * 1024))
gen "$tmp/small.json" 512
for f in big small; do
	"$B/bin/is-record" --no-sample -o "$tmp/$f.ist" -- \
	    "$PY" -m json.tool "$tmp/$f.json" /dev/null
done
"$B/bin/is-merge" "$tmp/small.ist" |
    "$B/bin/is-report" -f perfetto > "$tmp/small.json"

echo
python3 - "$B/bin" "$tmp" "$MB" <<'PY'
import json, os, statistics, subprocess, sys, time
b, d, mb = sys.argv[1], sys.argv[2], sys.argv[3]
big = os.path.join(d, "big.ist")

def events(path):
    out = subprocess.run([b + "/is-info", "--json", path], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["events"]

def run(cmd, shell=False, quiet=False):
    """the wall time of one run of cmd, its output thrown away"""
    t = time.monotonic()
    subprocess.run(cmd, shell=shell, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL if quiet else None)
    return time.monotonic() - t

def timed(cmd, shell=False, quiet=False):
    """the best wall time of 3 runs of cmd"""
    return min(run(cmd, shell, quiet) for _ in range(3))

n = events(big)
# the pipeline and its peer in interleaved rounds, so that the machine's
# drift (its neighbours, its clock) falls on both alike: the ratio is
# taken round by round, and said as its median and spread
peer = [b + "/is-info", big]
# through a pipe, is-info reads on one core (a file is read ahead on two)
peer1 = "cat '%s' | '%s/is-info'" % (big, b)
pipeline = ("'%s/is-merge' '%s' | '%s/is-analyze' | '%s/is-report' -f md"
            % (b, big, b, b))
ROUNDS = 3
rounds = [(run(peer), run(peer1, True), run(pipeline, True))
          for _ in range(ROUNDS)]
info, info1, pipe = (statistics.median(t) for t in zip(*rounds))
ratio = [p / i for i, _, p in rounds]
ratio1 = [p / i1 for _, i1, p in rounds]
print("pipeline on json.tool over %s MiB of JSON, %d events "
      "(%.1f MB trace), medians of %d interleaved rounds:" % (
          mb, n, os.path.getsize(big) / 1e6, ROUNDS))
print("  is-info decoding it: %.2f s (%.2f M events/s) reading ahead on two "
      "cores, %.2f s on one (a pipe)" % (info, n / info / 1e6, info1))
print("  is-merge | is-analyze | is-report -f md: %.2f s, %.2fx is-info "
      "(%.2f-%.2f; %.2fx on one core; target <= 3x)" % (
          pipe, statistics.median(ratio), min(ratio), max(ratio),
          statistics.median(ratio1)))
merged, analysed = os.path.join(d, "m.ist"), os.path.join(d, "a.ist")
stages = []
for name, cmd in (("is-merge", [b + "/is-merge", "-o", merged, big]),
                  ("is-analyze -o", [b + "/is-analyze", "-o", analysed,
                                     merged]),
                  ("is-report -f md", [b + "/is-report", "-f", "md",
                                       analysed])):
    stages.append("%s %.2f s" % (name, timed(cmd)))
print("  alone: " + ", ".join(stages))
# (its warning that the export is too big for the Perfetto UI left out)
t = timed([b + "/is-report", "-f", "perfetto", analysed], quiet=True)
print("  is-report -f perfetto of the analysed trace: %.2f s, %.2f M "
      "events/s (target >= 3 M/s)" % (t, n / t / 1e6))
# the peer: json.load of our Chrome trace JSON of the small recording
small = os.path.join(d, "small.json")
t = time.monotonic()
with open(small) as f:
    k = len(json.load(f)["traceEvents"])
t = time.monotonic() - t
print("  peer: Python's json.load of the same program's calls as Chrome "
      "trace JSON: %d events in %.2f s, %.2f M events/s (at that rate, "
      "%.0f s for this trace)" % (k, t, k / t / 1e6, n / (k / t)))
PY
