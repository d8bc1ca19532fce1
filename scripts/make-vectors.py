#!/usr/bin/env python3
"""make-vectors.py - (re)build the hand-crafted golden vectors in formats/vectors.

The valid vectors made from JSON Lines come from `is-cat --encode`; the rest
are CBOR written byte by byte here (so that they can hold what our writer
never writes: unknown kinds, extra fields, bad lengths) and compressed with
the zstd command (checksummed frames, like the library writes).
usage: make-vectors.py BINDIR
"""
import os
import struct
import subprocess
import sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                    "formats", "vectors")


def head(major, n):
    if n < 24:
        return bytes([major << 5 | n])
    if n < 0x100:
        return bytes([major << 5 | 24, n])
    if n < 0x10000:
        return bytes([major << 5 | 25]) + struct.pack(">H", n)
    if n < 0x100000000:
        return bytes([major << 5 | 26]) + struct.pack(">I", n)
    return bytes([major << 5 | 27]) + struct.pack(">Q", n)


def enc(v):
    if v is None:
        return b"\xf6"
    if v is True:
        return b"\xf5"
    if v is False:
        return b"\xf4"
    if isinstance(v, int):
        return head(0, v) if v >= 0 else head(1, -1 - v)
    if isinstance(v, float):
        return b"\xfb" + struct.pack(">d", v)
    if isinstance(v, str):
        b = v.encode()
        return head(3, len(b)) + b
    if isinstance(v, bytes):
        return head(2, len(v)) + v
    if isinstance(v, list):
        return head(4, len(v)) + b"".join(enc(x) for x in v)
    if isinstance(v, dict):
        return head(5, len(v)) + b"".join(enc(k) + enc(x)
                                          for k, x in v.items())
    raise TypeError(v)


def header(version=(1, 0), fmt="inferscope-trace", **extra):
    m = {"format": fmt, "version": list(version)}
    m.update(extra)
    return head(6, 55799) + enc(m)


def zstd(raw):
    return subprocess.run(["zstd", "-q", "-c", "-3", "--no-progress"],
                          input=raw, stdout=subprocess.PIPE,
                          check=True).stdout


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def main():
    bindir = sys.argv[1]
    iscat = os.path.join(bindir, "is-cat")
    valid = os.path.join(HERE, "valid")
    for f in sorted(os.listdir(valid)):
        if f.endswith(".jsonl") and not f.startswith("x-"):
            out = os.path.join(valid, f[:-6] + ".ist")
            args = [iscat, "--encode", "-o", out, os.path.join(valid, f)]
            if f.startswith("multi-frame"):
                args[2:2] = ["--frame-bytes", "200"]
            subprocess.run(args, check=True)

    # forward compatibility: an unknown header key, an unknown record kind
    # (30), a known record with an extra trailing element (after its
    # last field, 1.2's cut), a skippable frame
    s = lambda i, t: enc([1, i, t])
    raw = (header(future_key={"a": 1}) + s(1, "main") +
           enc([2, 1, 7, 7, None, None]) +
           enc([30, "from", "the", "future"]) +
           enc([7, 1, 1000, 500, 1, None, "extra element"]))
    skippable = b"\x50\x2a\x4d\x18" + struct.pack("<I", 3) + b"abc"
    write("valid/x-forward-compat.ist", skippable + zstd(raw))
    with open(os.path.join(valid, "x-forward-compat.jsonl"), "w") as f:
        f.write('{"type":"header","format":"inferscope-trace",'
                '"version":[1,0]}\n'
                '{"type":"scope","pid":7,"tid":7,"name":"main",'
                '"start_ns":1000,"end_ns":1500}\n')

    # a minor version from the future reads fine
    write("valid/x-minor-version.ist", zstd(header(version=(1, 9))))
    with open(os.path.join(valid, "x-minor-version.jsonl"), "w") as f:
        f.write('{"type":"header","format":"inferscope-trace",'
                '"version":[1,9]}\n')

    inv = {
        "empty": b"",
        "random": bytes((i * 197 + 31) % 256 for i in range(512)),
        "json": b'{"type":"scope","pid":1}\n',
        "text-zstd": zstd(b"hello, world\n"),
        "no-header": zstd(enc([7, 1, 0, 0, 1])),
        "other-format": zstd(header(fmt="other-trace")),
        "version-2": zstd(header(version=(2, 0))),
        "undefined-string": zstd(header() + enc([2, 1, 1, 1, None, None]) +
                                 enc([7, 1, 0, 5, 9])),
        "undefined-track": zstd(header() + s(1, "x") +
                                enc([7, 4, 0, 5, 1])),
        "string-out-of-sequence": zstd(header() + s(5, "x")),
        "absurd-length": zstd(header() + head(4, 0xffffffff) + enc(7)),
        "indefinite": zstd(header() + b"\x9f\x07\xff"),
        "missing-field": zstd(header() + s(1, "x") +
                              enc([2, 1, 1, 1, None, None]) +
                              enc([11, 1, 0, 5, 1])),
        "header-mid-frame": zstd(header() + header()),
    }
    # deep-nesting: an instant whose metadata nests 200 arrays deep
    inv["deep-nesting"] = zstd(header() + s(1, "x") +
                               enc([2, 1, 1, 1, None, None]) +
                               b"\x85" + enc(8) + enc(1) + enc(0) + enc(1) +
                               b"\x81" * 200 + b"\x01")
    # values JSON cannot say (one rule for every reader): a metadata map
    # with an integer key, and one holding a byte string; then a good
    # instant, which no reader may take as if nothing had happened
    after = enc([8, 1, 5, 1])
    inv["metadata-int-key"] = zstd(header() + s(1, "x") +
                                   enc([2, 1, 1, 1, None, None]) +
                                   enc([8, 1, 0, 1, {42: 1}]) + after)
    inv["metadata-bytes"] = zstd(header() + s(1, "x") +
                                 enc([2, 1, 1, 1, None, None]) +
                                 enc([8, 1, 0, 1, {"k": [b"\x1b[2J"]}]) +
                                 after)
    good = open(os.path.join(valid, "all-types.ist"), "rb").read()
    flip = bytearray(good)
    flip[len(flip) // 2] ^= 0x20
    inv["bit-flip"] = bytes(flip)
    inv["trailing-garbage"] = good + b"\x00garbage"
    multi = open(os.path.join(valid, "multi-frame.ist"), "rb").read()
    inv["truncated"] = multi[:len(multi) - 7]
    for name, data in inv.items():
        write("invalid/%s.ist" % name, data)


if __name__ == "__main__":
    main()
