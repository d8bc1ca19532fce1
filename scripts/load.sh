#!/bin/sh
# load.sh - make load: is-record under sustained load, with exact loss
# accounting and bounded memory.
#   1. one thread emitting markers as fast as Python can for LOAD_SECONDS
#      (60), under --trace-size-mb 16;
#   2. 200 threads emitting 5000 markers each, under --trace-size-mb 16.
# Each prints produced = recorded + lost, and the recorded process's peak
# RSS against the same program without recording.
set -eu
B=${1:-build}
S=${LOAD_SECONDS:-60}
PY=${PYTHON_SYS:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PATH="$(cd "$B" && pwd)/bin:$PATH"

cat > "$tmp/fast.py" <<'PY'
import resource, sys, time
from inferscope import mark_event
end = time.monotonic() + float(sys.argv[1])
n = 0
while time.monotonic() < end:
    for _ in range(1000):
        mark_event("m")
    n += 1000
print(n, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
PY
cat > "$tmp/threads.py" <<'PY'
import resource, threading
from inferscope import mark_event
def work():
    for _ in range(5000):
        mark_event("m")
ts = [threading.Thread(target=work, name="w-%d" % i) for i in range(200)]
for t in ts: t.start()
for t in ts: t.join()
# 5000 markers and a thread name from each thread
print(200 * 5001, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
PY

account() {   # account TRACE PRODUCED: recorded + lost must be PRODUCED
	is-cat "$1" | python3 -c '
import json, sys
kept = lost = 0
for l in sys.stdin:
    e = json.loads(l)
    if e["type"] == "instant":
        kept += 1
    elif e["type"] == "thread" and e.get("name", "").startswith("w-"):
        kept += 1   # each worker thread names itself: a record too
    elif e["type"] == "loss":
        lost += e["events"]
produced = int(sys.argv[1])
print("  produced %d = recorded %d + lost %d: %s" % (produced, kept, lost,
      "exact" if kept + lost == produced else "MISMATCH"))
sys.exit(kept + lost != produced)' "$2"
}

echo "== $S s of markers as fast as Python goes, --trace-size-mb 16"
base=$(PYTHONPATH="$B/python" "$PY" "$tmp/fast.py" 1 | cut -d' ' -f2)
out=$(is-record --no-python-calls --trace-size-mb 16 -o "$tmp/fast.ist" -- \
    "$PY" "$tmp/fast.py" "$S")
produced=${out% *}
rss=${out#* }
account "$tmp/fast.ist" "$produced"
echo "  $(( produced / S )) markers/s; peak RSS $((rss / 1024)) MiB recorded," \
    "$((base / 1024)) MiB not (bound: 16 MiB of buffers)"
ls -l "$tmp/fast.ist" | awk '{ printf "  trace: %.1f MiB\n", $5 / 1048576 }'

echo "== 200 threads x 5000 markers (and their names), --trace-size-mb 16"
out=$(is-record --no-python-calls --trace-size-mb 16 -o "$tmp/t.ist" -- \
    "$PY" "$tmp/threads.py")
account "$tmp/t.ist" "${out% *}"
echo "  peak RSS $(( ${out#* } / 1024 )) MiB"
