"""C functions bound to a class (its static and class methods) beside
builtins and methods: named as cProfile names them where it says their
module (torch.add: torch sets it), else by their class (dict.fromkeys,
bool.from_bytes apart from int.from_bytes), a module's functions by the
module even where its class is a subclass of ModuleType (as lazy loaders
make them: math.comb); `# names:` lists what the trace must name them, the
torch ones only where torch imports."""
# names: str.maketrans dict.fromkeys int.from_bytes bool.from_bytes
# names: datetime.datetime.now object.__new__ str.upper builtins.len
# names: math.comb
# torch: torch.add torch.ones torch.tensor Tensor.item
import datetime
import math
import types


class _Module(types.ModuleType):
    pass


def main():
    str.maketrans("a", "b")
    dict.fromkeys([1, 2])
    int.from_bytes(b"\x01", "little")
    bool.from_bytes(b"\x01", "little")
    datetime.datetime.now()
    object.__new__(object)
    "abc".upper()
    len([1])
    math.__class__ = _Module
    math.comb(5, 2)
    try:
        import torch
    except ImportError:
        return
    torch.add(torch.ones(2), 1)
    torch.tensor([1.0]).item()


main()
