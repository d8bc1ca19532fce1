"""Method calls, polymorphic call sites, recursion, generators, C calls
that raise, callbacks from C into Python."""
import math


class Box:
    def __init__(self, v):
        self.v = v

    def get(self):
        return self.v


def g(x):
    return x + 1


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def gen(n):
    for i in range(n):
        yield i


def methods():
    l, d, s = [], {"a": 1}, "a b c"
    for i in range(300):
        l.append(i)          # a method descriptor on 3.12+
        d.get("a")
        s.split()
        " ".join(["x", "y"])
    l.sort(key=lambda v: -v)     # C calling back into Python 300 times
    return len(l)


def polymorphic():
    # one call site, Python and C callables in turn: no site may be
    # switched off after its first Python call
    fs = [g, abs, Box(3).get, math.sqrt]
    total = 0
    for i in range(200):
        f = fs[i % 4]
        total += f(4) if f is not fs[2] else f()
    return total


def raising():
    d = {}
    n = 0
    for i in range(50):
        try:
            d.pop("missing")
        except KeyError:
            n += 1
    return n


def main():
    methods()
    polymorphic()
    raising()
    fib(15)
    sum(gen(100))
    boxes = [Box(i) for i in range(100)]
    return sum(b.get() for b in boxes)


main()
