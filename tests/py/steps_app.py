"""A program that repeats a step: two slow ones (warm-up), then fast
ones.  argv[1]: scope (each step a scope "step") or function (each a call
of step()).  Prints on stderr each step's duration (perf_counter) and the
CLOCK_MONOTONIC times (the trace's clock) just before step 3 and just after
step 5: the references the analysis windows are checked against."""
import sys
import time

from inferscope import scope


def load():
    time.sleep(0.1)


def work(n):
    s = 0
    for i in range(n):
        s += i
    return s


def step(i):
    time.sleep(0.5 if i < 2 else 0.05)
    # a millisecond of its own, and one in work(): each more self time
    # than any function of the start-up, even one a loaded machine took
    # a time slice from (the analysis lists the 25 with the most)
    s = 0
    for k in range(20000):
        s += k
    work(20000)


load()
took = []
for i in range(8):
    if i == 2:
        before3 = time.monotonic_ns()
    t = time.perf_counter()
    if sys.argv[1] == "scope":
        with scope("step"):
            time.sleep(0.5 if i < 2 else 0.05)
            work(20000)
    else:
        step(i)
    took.append(time.perf_counter() - t)
    if i == 4:
        after5 = time.monotonic_ns()
print(" ".join("%.6f" % x for x in took), before3, after5, file=sys.stderr)
