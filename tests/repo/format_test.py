#!/usr/bin/env python3
"""Every C++ source is formatted with the repository's .clang-format (make format fixes it).

Usage: format_test.py --root REPO
"""
import argparse
import os
import subprocess
import sys

SKIP = {".git", "debian", "results"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    a = ap.parse_args()
    files = []
    for d, dirs, names in os.walk(a.root):
        dirs[:] = [x for x in dirs if x not in SKIP and not x.startswith("build")]
        files += [os.path.join(d, n) for n in names if n.endswith((".cpp", ".hpp"))]
    if len(files) < 50:
        print("FAIL: found only %d sources under %s" % (len(files), a.root))
        return 1
    r = subprocess.run(["clang-format", "--dry-run", "-Werror"] + sorted(files), capture_output=True, text=True)
    bad = sorted({line.split(":")[0] for line in r.stderr.splitlines() if ": error:" in line})
    for f in bad:
        print("FAIL: not formatted: %s" % os.path.relpath(f, a.root))
    print("%d sources, %d not formatted" % (len(files), len(bad)))
    return 1 if bad or r.returncode else 0


if __name__ == "__main__":
    sys.exit(main())
