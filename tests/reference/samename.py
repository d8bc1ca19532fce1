"""Functions that share a name: a property's getter and setter, a function
defined twice, two lambdas, two comprehensions (functions of their own up to
3.11).  cProfile tells them apart by file and line; so must the analysis."""


class Box:
    def __init__(self):
        self._v = 0

    @property
    def v(self):
        t = 0
        for i in range(40):
            t += i
        return self._v + t - t

    @v.setter
    def v(self, x):
        t = 0
        for i in range(60):
            t += i
        self._v = x + t - t


def work(n):
    t = 0
    for i in range(n):
        t += i
    return t


first = work


def work(n):
    t = 0
    for i in range(n):
        t -= i
    return t


def main():
    b = Box()
    for i in range(3000):
        b.v = b.v + 1
    for i in range(700):
        first(100)
    for i in range(300):
        work(100)
    inc = lambda x: x + 1
    dec = lambda x: x - 1
    s = 0
    for i in range(2000):
        s = inc(s)
    for i in range(1000):
        s = dec(s)
    for i in range(30):
        a = [j * j for j in range(3000)]
    for i in range(20):
        a = [j + j for j in range(3000)]
    return s


main()
