"""What tests/gpu's scripts share: the checks run (all of them, each
printed, the failed ones kept), their figures, and how a GPU operation
finds the call that launched it."""
import collections
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PY = os.environ.get("IST_GPU_PYTHON", "python3")
failed = []
fig = collections.OrderedDict()


def check(ok, what):
    print("%s: %s" % ("ok" if ok else "FAILED", what), flush=True)
    if not ok:
        failed.append(what)


def corr(e):
    """Correlation ids are a process's own."""
    return (e["pid"], e.get("correlation"))
