"""Calls on threads started by threading and by _thread directly (as a C
extension would), on every Python."""
# expect: work 30
# expect: append 3000
# expect: raw 1
import _thread
import threading


def work(n):
    out = []
    for i in range(n):
        out.append(i)
    return len(out)


def raw(done):
    for _ in range(10):
        work(100)
    done.release()


def main():
    t = threading.Thread(target=lambda: [work(100) for _ in range(10)])
    t.start()
    t.join()
    done = threading.Lock()
    done.acquire()
    _thread.start_new_thread(raw, (done,))
    done.acquire()
    for _ in range(10):
        work(100)


main()
