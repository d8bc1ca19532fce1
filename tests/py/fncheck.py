"""fncheck.py PYTHON PROGRAM WORKDIR - the analysis's functions of PROGRAM
under is-record against cProfile's, run with PYTHON.

cProfile keys a function by file, line and name; the analysis must too, so
that functions sharing a name (a property's getter and setter, a function
defined twice, lambdas, comprehensions) are rows of their own, each with
its own line.  Every function cProfile counts in PROGRAM 20 times or more
must be a row of the analysis (is-analyze --json, the 25 with the most
self time: the class body and __init__, run once, may fall out) at the
same line with the same count.
Prints each difference and a summary; exits 1 on any difference, or when
no name is shared by two rows (nothing was told apart).
"""
import collections
import json
import os
import subprocess
import sys

PY, PROG, WORK = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
BASE = os.path.basename(PROG)

DUMP = r'''
import json, pstats, sys
st = pstats.Stats(sys.argv[1]).stats
json.dump([[f, line, name, nc] for (f, line, name), (cc, nc, tt, ct, _)
           in st.items()], sys.stdout)
'''

prof = os.path.join(WORK, "fn.prof")
subprocess.run([PY, "-m", "cProfile", "-o", prof, PROG], check=True,
               cwd=WORK, stdout=subprocess.DEVNULL)
ref = {line: (name, nc) for f, line, name, nc in json.loads(subprocess.run(
    [PY, "-c", DUMP, prof], check=True, capture_output=True,
    text=True).stdout) if f == PROG}

ist = os.path.join(WORK, "fn.ist")
subprocess.run(["is-record", "--no-sample", "-o", ist, "--", PY, PROG],
               check=True, cwd=WORK, stdout=subprocess.DEVNULL)
merged = subprocess.run(["is-merge", ist], check=True,
                        capture_output=True).stdout
an = json.loads(subprocess.run(["is-analyze", "--json"], input=merged,
                               check=True, capture_output=True).stdout)
ours = [f for f in an["functions"] if f.get("file") == PROG]
byline = {f["line"]: f for f in ours}
bad = 0
if len(byline) != len(ours):
    print("%s: two rows at one line" % BASE)
    bad += 1
for line, (name, n) in sorted(ref.items()):
    f = byline.get(line)
    if n < 20 and f is None:
        continue
    if f is None:
        print("%s:%d: %s (%d calls in cProfile) is no row of the analysis"
              % (BASE, line, name, n))
        bad += 1
    elif f["count"] != n:
        print("%s:%d: %s %d calls in the analysis, cProfile counts %d" %
              (BASE, line, f["name"], f["count"], n))
        bad += 1
shared = [k for k, v in collections.Counter(f["name"] for f in ours).items()
          if v > 1]
if not shared:
    print("%s: no name shared by two rows" % BASE)
    bad += 1
print("%s: %d functions, %d names shared by several (%s); %d differ" % (
    BASE, len(ref), len(shared), ", ".join(sorted(
        s.rsplit(".", 1)[-1] for s in shared)), bad))
sys.exit(1 if bad else 0)
