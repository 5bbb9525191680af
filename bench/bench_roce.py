#!/usr/bin/env python3
"""weft roce check at scale: a 3-tier Clos of 2,000 switches and 50,000 hosts written as a
fabric YAML file, checked end to end (load, render every device's intended config, every
per-port, per-link and fabric-wide check, the buffer-dependency search). Target: < 2 s.
OpenSM has no RoCE side, so there is no column to set beside it."""
import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time


def clos(path, pods=20, leaves=80, spines=16, supers=80, hosts=50000):
    """pods x (leaves + spines) + supers switches; hosts spread over the leaves."""
    n_leaves = pods * leaves
    with open(path, "w") as f:
        f.write("# bench: %d-pod Clos, %d leaves, %d spines, %d super-spines, %d hosts\n" %
                (pods, n_leaves, pods * spines, supers, hosts))
        f.write("defaults: {speed: 100G, length: 3m}\nswitches:\n")
        for p in range(pods):
            for l in range(leaves):
                f.write("  - {name: p%d-leaf%d, os: sonic, asic: spectrum2}\n" % (p, l))
            for s in range(spines):
                f.write("  - {name: p%d-spine%d, os: sonic}\n" % (p, s))
        for s in range(supers):
            f.write("  - {name: super%d, os: cumulus}\n" % s)
        f.write("hosts:\n")
        for h in range(hosts):
            f.write("  - {name: h%d}\n" % h)
        f.write("links:\n")
        for h in range(hosts):
            leaf = h % n_leaves
            f.write("  - [p%d-leaf%d:Ethernet%d, h%d:eth0]\n" % (leaf // leaves, leaf % leaves, 4 * (h // n_leaves), h))
        per_spine = supers // spines
        for p in range(pods):
            for l in range(leaves):
                for s in range(spines):
                    f.write("  - [p%d-leaf%d:Ethernet%d, p%d-spine%d:Ethernet%d, 400G, 30m]\n" %
                            (p, l, 256 + 4 * s, p, s, 4 * l))
            for s in range(spines):
                for k in range(per_spine):
                    f.write("  - [p%d-spine%d:Ethernet%d, super%d:swp%d, 400G, 100m]\n" %
                            (p, s, 512 + 4 * k, s * per_spine + k, p + 1))
    return pods * (leaves + spines) + supers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "clos.yaml")
        switches = clos(path)
        size_mb = os.path.getsize(path) / 1e6
        rows = []
        for _ in range(a.runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.time()
            p = subprocess.run([a.weft, "roce", "check", "--fabric", path], capture_output=True, text=True)
            wall = time.time() - t0
            rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            out = p.stdout + p.stderr
            m = re.search(r"(\d+) switches, (\d+) hosts, (\d+) ports, (\d+) links; loaded in (\d+) ms, checked in (\d+) ms: "
                          r"(\d+) errors, (\d+) warnings", out)
            if p.returncode != 0 or not m:
                print("weft roce check failed (rc %d):\n%s" % (p.returncode, out[-2000:]))
                return 1
            rows.append((wall, int(m.group(5)), int(m.group(6)), rss, m))
            del before
        m = rows[0][4]
        print("weft roce check: %s switches, %s hosts, %s ports, %s links (fabric file %.1f MB); %s errors, %s warnings"
              % (m.group(1), m.group(2), m.group(3), m.group(4), size_mb, m.group(7), m.group(8)))
        print("| run | wall s | load ms | check ms | peak RSS MiB | target |")
        print("|---|---|---|---|---|---|")
        for i, (wall, load, chk, rss, _) in enumerate(rows):
            print("| %d | %.2f | %d | %d | %.0f | < 2 s: %s |" % (i + 1, wall, load, chk, rss, "met" if wall < 2 else "MISSED"))
        print("(OpenSM has no RoCE side: no column beside it.)")
    assert switches == 2000
    return 0


if __name__ == "__main__":
    sys.exit(main())
