# needs: numpy
"""C methods of extension types (ndarray.sum, ndarray.item: the calls a
GPU user must see as Tensor.item) and numpy's Python functions."""
import numpy as np


def step(a):
    s = a.sum()
    m = a.mean()
    v = a[0].item()
    return float(s) + float(m) + v


def main():
    a = np.arange(16.0)
    total = 0.0
    for _ in range(100):
        total += step(a)
        a = np.concatenate([a[1:], a[:1]])
    return total


main()
