"""events.py TRACE.jsonl QUERY - small queries over is-cat output for tests.

Queries (print one line each):
  durations NAME     duration in ms of every scope NAME, in start order
  count TYPE [NAME]  number of events of TYPE (with NAME)
  pids TYPE          distinct pids having events of TYPE, sorted
  threads            "tid name" of every thread record, later names win
  scope-tids NAME    tids of scopes NAME
  metadata NAME      the metadata of instants NAME, as compact JSON
  names TYPE         distinct names of TYPE, sorted
"""
import json
import sys


def main():
    path, query, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(path) as f:
        evs = [json.loads(line) for line in f]
    sel = lambda t, n=None: [e for e in evs if e["type"] == t and
                             (n is None or e.get("name") == n)]
    if query == "durations":
        for e in sorted(sel("scope", args[0]), key=lambda e: e["start_ns"]):
            print("%.3f" % ((e["end_ns"] - e["start_ns"]) / 1e6))
    elif query == "count":
        print(len(sel(args[0], args[1] if len(args) > 1 else None)))
    elif query == "pids":
        print(" ".join(str(p) for p in sorted({e["pid"] for e in sel(args[0])})))
    elif query == "threads":
        names = {}
        for e in sel("thread"):
            if "name" in e:
                names[(e["pid"], e["tid"])] = e["name"]
        for (p, t), n in sorted(names.items()):
            print(t, n)
    elif query == "scope-tids":
        print(" ".join(str(e["tid"]) for e in sel("scope", args[0])))
    elif query == "metadata":
        for e in sel("instant", args[0]):
            print(json.dumps(e.get("metadata"), separators=(",", ":")))
    elif query == "names":
        print("\n".join(sorted({e["name"] for e in sel(args[0])})))
    else:
        sys.exit("unknown query " + query)


main()
