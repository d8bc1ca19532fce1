"""refcheck.py PYTHON PROGRAM WORKDIR - call counts of PROGRAM under
is-record against cProfile's, run with PYTHON.

For every Python function defined in PROGRAM (its file and first line) the
number of calls must be equal, and so must the calls into C that each of
them makes, by the C function's short name (list.append and cProfile's
"<method 'append' of 'list' objects>" are both "append").  A program may
state its counts instead, known by construction, in lines such as
"# expect: work 30" (all its threads together; a C function's calls
from the program's own functions) when cProfile cannot count
them (it sees one thread up to 3.11).  Prints one line per compared figure
that differs, and a summary; exits 1 on any difference.
"""
import collections
import json
import os
import re
import subprocess
import sys

PY, PROG, WORK = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
BASE = os.path.basename(PROG)

DUMP = r'''
import json, pstats, sys
st = pstats.Stats(sys.argv[1]).stats
out = []
for (f, line, name), (cc, nc, tt, ct, callers) in st.items():
    out.append([f, line, name, nc, [[cf, cl, cn, v[1] if isinstance(v, tuple) else v]
                                   for (cf, cl, cn), v in callers.items()]])
json.dump(out, sys.stdout)
'''


GC = re.compile(r"gc \(generation [0-9]\)$")


def cshort(name):
    """cProfile's label of a C function, or ours, to its short name."""
    m = re.match(r"<method '([^']+)' of '[^']+' objects>", name)
    if m:
        return m.group(1)
    m = re.match(r"<built-in method ([^>]+)>", name)
    if m:
        return m.group(1).rsplit(".", 1)[-1]
    return name.rsplit(".", 1)[-1]


def cprofile_counts():
    prof = os.path.join(WORK, "ref.prof")
    subprocess.run([PY, "-m", "cProfile", "-o", prof, PROG], check=True,
                   cwd=WORK, stdout=subprocess.DEVNULL)
    rows = json.loads(subprocess.run([PY, "-c", DUMP, prof], check=True,
                                     capture_output=True, text=True).stdout)
    py, cc = collections.Counter(), collections.Counter()
    for f, line, name, nc, callers in rows:
        if f == PROG:
            py[line] += nc
        elif f == "~":
            for cf, cl, cn, n in callers:
                if cf == PROG:
                    cc[(cl, cshort(name))] += n
    return py, cc


def our_counts():
    ist = os.path.join(WORK, "ref.ist")
    subprocess.run(["is-record", "--no-sample", "-o", ist, "--", PY, PROG],
                   check=True, cwd=WORK, stdout=subprocess.DEVNULL)
    evs = [json.loads(l) for l in subprocess.run(
        ["is-cat", ist], check=True, capture_output=True,
        text=True).stdout.splitlines()]
    py, cc = collections.Counter(), collections.Counter()
    byname = collections.Counter()
    calls = collections.defaultdict(list)
    for e in evs:
        if e["type"] == "cpu_call":
            calls[(e["pid"], e["tid"])].append(e)
    for evl in calls.values():
        # parents: the innermost call that contains each one
        evl.sort(key=lambda e: (e["start_ns"], -e["end_ns"]))
        stack = []
        for e in evl:
            if "file" not in e and GC.match(e["name"]):
                # a collection, recorded as a call on the thread it paused
                # (formats/trace-format.md): cProfile sees none, and when
                # one falls inside the program's functions depends on what
                # was allocated before them
                continue
            while stack and stack[-1]["end_ns"] <= e["start_ns"] and \
                    stack[-1]["end_ns"] < e["end_ns"]:
                stack.pop()
            parent = stack[-1] if stack else None
            mine = e.get("file") == PROG
            if mine:
                py[e["line"]] += 1
            if "file" not in e:
                if parent is not None and parent.get("file") == PROG:
                    cc[(parent["line"], cshort(e["name"]))] += 1
                    byname[cshort(e["name"])] += 1
            elif mine:
                byname[e["name"].rsplit(".", 1)[-1]] += 1
            stack.append(e)
    return py, cc, byname


def main():
    with open(PROG) as f:
        expect = [l.split()[2:4] for l in f if l.startswith("# expect:")]
    py, cc, byname = our_counts()
    bad = 0
    if expect:
        for name, n in expect:
            if byname[name] != int(n):
                print("%s: %s called %d times, expected %s" %
                      (BASE, name, byname[name], n))
                bad += 1
        print("%s: %d expected counts, %d differ" % (BASE, len(expect), bad))
        return 1 if bad else 0
    rpy, rcc = cprofile_counts()
    for line in sorted(set(py) | set(rpy)):
        if py[line] != rpy[line]:
            print("%s:%d: %d calls recorded, cProfile counts %d" %
                  (BASE, line, py[line], rpy[line]))
            bad += 1
    for key in sorted(set(cc) | set(rcc)):
        if cc[key] != rcc[key]:
            print("%s:%d calls %s %d times recorded, cProfile counts %d" %
                  (BASE, key[0], key[1], cc[key], rcc[key]))
            bad += 1
    print("%s: %d functions (%d calls), %d C callees (%d calls); %d differ"
          % (BASE, len(rpy), sum(rpy.values()), len(rcc),
             sum(rcc.values()), bad))
    return 1 if bad else 0


sys.exit(main())
