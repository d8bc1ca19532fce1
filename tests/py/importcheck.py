"""importcheck.py ANALYSIS IMPORTTIME: every module of an analysis's
imports.modules against the line python -X importtime printed for the same
import in the same run: self and cumulative within 1% or 100 us.

-X importtime prints one line per import it timed, as 'self | cumulative |
name', indented by nesting.  An import that found its module loaded by one
nested in it (import json.decoder: json's body imports json.decoder
itself) has a line but ran no body; InferScope names an import by the body
it ran, so such a line has no counterpart: a module matches any of the
lines with its name."""
import json
import re
import sys

an = json.load(open(sys.argv[1]))
lines = {}
for l in open(sys.argv[2]):
    m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|\s*(\S+)$", l)
    if m:
        lines.setdefault(m.group(3), []).append(
            (int(m.group(1)) * 1000, int(m.group(2)) * 1000))


def near(a, b):
    return abs(a - b) <= max(100_000, b / 100)


mods, bad = an["imports"]["modules"], []
for m in mods:
    cands = lines.get(m["module"], [])
    if not any(near(m["self_ns"], s) and near(m["cumulative_ns"], c)
               for s, c in cands):
        bad.append("%s: ours %d/%d, -X importtime %s" % (
            m["module"], m["self_ns"], m["cumulative_ns"], cands))
print("%d modules, %d differ" % (len(mods), len(bad)))
for b in bad:
    print(b)
sys.exit(1 if bad or len(mods) < 10 else 0)
