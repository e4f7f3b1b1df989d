#!/usr/bin/env python3
"""Builds browser/wheels/taskyon_tabular-1.0.0-py3-none-any.whl from
browser/wheels/src, byte for byte the same on every run (issue 15, item 5).

A wheel is a zip (PEP 427, the binary distribution format): the package's
files, then NAME-VERSION.dist-info/{METADATA,WHEEL,top_level.txt,RECORD}, where
RECORD lists each file's urlsafe-base64 SHA-256 without padding and its size.
Entries are stored uncompressed, in sorted order, with a fixed 1980-01-01 date
and mode 0644, so the wheel's id (browser/host/pyodide-manifest.js) depends on
the sources only.

  python3 scripts/build-wheel.py            write the wheel
  python3 scripts/build-wheel.py --check    exit 1 if the committed wheel differs
"""
import base64
import hashlib
import io
import pathlib
import sys
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "browser" / "wheels" / "src"
NAME, VERSION, PACKAGE = "taskyon_tabular", "1.0.0", "taskyon_tabular"
OUT = ROOT / "browser" / "wheels" / f"{NAME}-{VERSION}-py3-none-any.whl"
DIST_INFO = f"{NAME}-{VERSION}.dist-info"


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def wheel_bytes():
    files = {}
    for f in sorted((SRC / PACKAGE).rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts:
            files[f.relative_to(SRC).as_posix()] = f.read_bytes()
    files[f"{DIST_INFO}/METADATA"] = (SRC / "METADATA").read_bytes()
    files[f"{DIST_INFO}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: taskyon scripts/build-wheel.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    files[f"{DIST_INFO}/top_level.txt"] = f"{PACKAGE}\n".encode()
    record = "".join(record_line(p, d) + "\n" for p, d in files.items()) + f"{DIST_INFO}/RECORD,,\n"
    files[f"{DIST_INFO}/RECORD"] = record.encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o100644 << 16
            info.create_system = 3
            z.writestr(info, data, compress_type=zipfile.ZIP_STORED)
    return out.getvalue()


def main():
    data = wheel_bytes()
    if "--check" in sys.argv[1:]:
        if not OUT.exists() or OUT.read_bytes() != data:
            print(f"{OUT} is not what browser/wheels/src builds: run python3 scripts/build-wheel.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
