#!/usr/bin/env python3
"""make-wheel.py - the Python API as a wheel, for a venv: pip installs it
offline (pip install --no-index FILE.whl) and uninstalls it.

usage: make-wheel.py PYDIR OUTDIR VERSION

PYDIR holds the package (inferscope/) and the collector built for each
Python (_inferscope.cpython-3XY-*.so), which the wheel carries side by
side: one file for every CPython the build knew, each loading its own.
The bootstrap (sitecustomize.py) stays out: is-record brings its own.
"""
import base64
import hashlib
import os
import sys
import zipfile


def digest(data):
    h = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return "sha256=" + h.rstrip(b"=").decode()


def main():
    pydir, outdir, version = sys.argv[1:4]
    name = "inferscope-%s-py3-none-any.whl" % version
    info = "inferscope-%s.dist-info" % version
    files = [os.path.join("inferscope", "__init__.py")]
    files += sorted(f for f in os.listdir(pydir)
                    if f.startswith("_inferscope") and f.endswith(".so"))
    meta = {
        info + "/METADATA": "Metadata-Version: 2.1\nName: inferscope\n"
        "Version: %s\nSummary: InferScope's Python API: scope, mark_event, "
        "start, stop, dump\nRequires-Python: >=3.8\n" % version,
        info + "/WHEEL": "Wheel-Version: 1.0\nGenerator: inferscope "
        "make-wheel.py\nRoot-Is-Purelib: false\nTag: py3-none-any\n",
    }
    record = []
    tmp = os.path.join(outdir, name + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for f in files:
            with open(os.path.join(pydir, f), "rb") as fh:
                data = fh.read()
            arc = f.replace(os.sep, "/")
            zi = zipfile.ZipInfo(arc, (2026, 1, 1, 0, 0, 0))
            zi.external_attr = (0o755 if f.endswith(".so") else 0o644) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
            record.append("%s,%s,%d" % (arc, digest(data), len(data)))
        for arc, text in meta.items():
            data = text.encode()
            z.writestr(zipfile.ZipInfo(arc, (2026, 1, 1, 0, 0, 0)), data)
            record.append("%s,%s,%d" % (arc, digest(data), len(data)))
        record.append(info + "/RECORD,,")
        z.writestr(zipfile.ZipInfo(info + "/RECORD", (2026, 1, 1, 0, 0, 0)),
                   "\n".join(record) + "\n")
    os.replace(tmp, os.path.join(outdir, name))
    print(os.path.join(outdir, name))


if __name__ == "__main__":
    main()
