#!/usr/bin/env python3
"""SA PathRecord throughput: weft in process, and weft and OpenSM through saquery.

On the same 1,000-CA fat tree (ft2:leaves=40,spines=20,hosts=25):
  - weft_sa_bench: the MPI job start (1,000 nodes x 4 ranks, each rank asking a
    path to every other node: 3,996,000 PathRecord Gets) in process;
  - OpenSM 3.3.23 and weft, each as the SM on ibsim, asked the same N random
    `saquery --src-to-dst A:B` (one process per query, as a script would), each
    query checked to return one PathRecord; then flooded by weft_sa_flood (one
    client, 20,000 PathRecord GetTables, 16 in flight), the same for both.
Prints a table. Everything started is stopped by PID.
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import ibsim_bringup as b  # noqa: E402

SPEC = "ft2:leaves=40,spines=20,hosts=25"


def queries(pairs, work, sock):
    t0 = time.time()
    ok = 0
    for s, d in pairs:
        out = b.run(["saquery", "--src-to-dst", "%d:%d" % (s, d)], work, sock, check=False).stdout
        ok += out.count("PathRecord dump") == 1 and ("dlid....................%d\n" % d) in out
    return time.time() - t0, ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--sa-bench", required=True, help="the weft_sa_bench binary")
    ap.add_argument("--flood", required=True, help="the weft_sa_flood binary")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--scratch", default="/tmp/weft-bench-sa")
    a = ap.parse_args()
    shutil.rmtree(a.scratch, ignore_errors=True)
    os.makedirs(a.scratch)
    inproc = subprocess.run([a.sa_bench, "--spec", SPEC], capture_output=True, text=True, timeout=600)
    print(inproc.stdout.strip())
    net = os.path.join(a.scratch, "fabric.net")
    b.run([a.weft, "topo", SPEC, "-o", net], a.scratch, "", preload=False)
    rows = []
    for sm in ("opensm", "weft"):
        work = os.path.join(a.scratch, sm)
        os.makedirs(work)
        sock = "weft-bench-sa-%s-%d" % (sm, os.getpid())
        log = os.path.join(work, sm + ".log")
        with b.Ibsim(net, work, sock):
            cmd = (["opensm", "-f", log, "-d", "2"] if sm == "opensm" else
                   [a.weft, "sm", "--state-dir", os.path.join(work, "state"), "--log-file", log, "--rest", "off"])
            with b.Background(cmd, work, sock, log, env={"OSM_TMP_DIR": work, "OSM_CACHE_DIR": work}):
                disc = b.parse_ibnetdiscover(b.run(["ibnetdiscover"], work, sock).stdout)
                lids = sorted(pt[2] for n in disc.values() if n["type"] != "Switch" for pt in n["ports"].values())
                rng = random.Random(1)
                pairs = [tuple(rng.sample(lids, 2)) for _ in range(a.queries)]
                secs, ok = queries(pairs, work, sock)
                fl = b.run([a.flood, "--lids", "%d-%d" % (min(lids), max(lids)), "--queries", "20000",
                            "--window", "16"], work, sock, check=False, timeout=600)
                m = re.search(r"answered (\d+) valid.*, ([\d.]+) s, (\d+) queries/s", fl.stdout)
                flood = (int(m.group(1)), float(m.group(2)), int(m.group(3))) if m else (0, 0.0, 0)
        rows.append((sm, len(lids), a.queries, ok, secs, flood))
    print()
    print("| SM | CAs | saquery runs (one process each) | one PathRecord back | saquery/s "
          "| flood: 20,000 PathRecord GetTables, 16 in flight | answered | flood queries/s |")
    print("|---|---|---|---|---|---|---|---|")
    for sm, cas, n, ok, secs, (fok, fsecs, fqps) in rows:
        print("| %s | %d | %d | %d | %.0f | %.2f s | %d | %d |" % (sm, cas, n, ok, n / secs, fsecs, fok, fqps))
    return 0 if all(r[3] == r[2] and r[5][0] == 20000 for r in rows) else 1


if __name__ == "__main__":
    b.run_main(main)
