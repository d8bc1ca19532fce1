"""A service with a flight recorder (is-record --ring / --dump-on): work
before a dump, the dump, work after it.  argv[1]: api (inferscope.dump())
or signal (SIGUSR1 to is-record, its parent); argv[2]: big (marks of 1.2 KB
each, enough to overrun --trace-size-mb 1).  Prints on stderr what dump()
returned and the dump's time on CLOCK_MONOTONIC, the trace's clock."""
import os
import signal
import sys
import time

import inferscope


def before():
    pass


def after():
    pass


for i in range(4000 if sys.argv[2:] == ["big"] else 300):
    before()
    if sys.argv[2:] == ["big"]:
        inferscope.mark_event("big", metadata={"pad": os.urandom(600).hex()})
        if i % 20 == 0:
            time.sleep(0.005)      # the writer keeps up: no ring drops
            # (1 ms had been too short on a loaded machine: the writer,
            # descheduled, let the thread's ring fill: "buffer full")
if sys.argv[1] == "api":
    said = inferscope.dump()       # returns when this process's is written
else:
    os.kill(os.getppid(), signal.SIGUSR1)
    # written when the stream, empty until a dump, has bytes
    path = "%s/%d.ist" % (os.environ["INFERSCOPE_DIR"], os.getpid())
    deadline = time.monotonic() + 60
    while os.path.getsize(path) == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    said = os.path.getsize(path) > 0
for _ in range(1000):
    after()
print(said, file=sys.stderr)
