"""A program that pauses and resumes its own recording (is-record
--capture-range api): prints how many work() calls it made inside the
windows it opened, the reference the trace's count is checked against."""
import sys
import threading
import time

import inferscope


def work(n):
    s = 0
    for i in range(n):
        s += abs(i)
    return s


inside = 0
for _ in range(7):          # before start(): not recorded
    work(10)
inferscope.start()
for _ in range(5):
    work(10)
    inside += 1


def outer():
    global inside
    work(100)
    inside += 1
    inferscope.stop()       # outer and <module> end here, cut
    for _ in range(11):
        work(10)
    time.sleep(0.02)
    inferscope.start()      # and start again here, cut
    work(100)
    inside += 1


outer()
t = threading.Thread(target=lambda: [work(10) for _ in range(3)],
                     name="helper")
t.start()
t.join()
inside += 3
inferscope.stop()
work(10)
print(inside, file=sys.stderr)
