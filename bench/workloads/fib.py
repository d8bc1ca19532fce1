"""Call-heavy pure Python: recursive Fibonacci (about 240k calls).

fib.py N [settle]: settle sleeps 0.1 s first, so that a recorder's
threads have started before the calls (and before the exit of a run
that makes none): the bench's instruction counts take fib(20) minus
fib(0), which must differ by the calls alone."""
import sys
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


if __name__ == "__main__":
    if sys.argv[2:] == ["settle"]:
        time.sleep(0.1)
    print(fib(int(sys.argv[1]) if len(sys.argv) > 1 else 24))
