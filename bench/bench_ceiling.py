#!/usr/bin/env python3
"""The rig's ceiling (issue 32): how fast ibsim (through umad2sim) answers the SMPs a
bring-up needs, with no SM logic between them, beside weft's and OpenSM's bring-up of
the same fabric in the same run.

Per fabric, on a fresh ibsim each:
- weft sm --once as it runs: its bring-up time is its summary's "total" phase;
- weft sm --once again, every SMP it sends logged by the madcount shim (WEFT_MADLOG;
  the shim's write per SMP slows weft, so this run is not the one timed); then, on that
  fabric as weft left it (the LIDs LID-routed SMPs need), weft_smp_replay sends the same
  SMPs again, 64 on the wire at once (weft's max_wire_smps) and 256: its wall time is
  the ceiling, the least time any SM could spend on those SMPs here;
- OpenSM's bring-up (opensm -o, from its log's first line to SUBNET UP, as
  bench_bringup.py times it: the process's wall time).
The ratio weft/ceiling is how close weft runs to the rig's limit (issue 32's target:
within 1.2x on the radix-56 tree).

Usage: bench_ceiling.py --weft BUILD/app/weft --shim BUILD/bench/libweft_madcount.so
       --replay BUILD/bench/weft_smp_replay [--huge] [--no-opensm] [--runs N]"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, HERE)
import ibsim_bringup as b  # noqa: E402
from bench_bringup import ibsim_args, weft_phases  # noqa: E402

FABRICS = [("ft3-444sw", "ft3:pods=8,leaves=24,aggs=18,hosts=18,cores=6,links=2")]
HUGE = [("ft3-3920sw", "ft3:pods=56,leaves=28,aggs=28,hosts=28,cores=28,radix=56")]


def sm_once(a, work, env):
    """weft sm --once on the ibsim `env` names: (its stdout, its total phase s, wall s)."""
    t0 = time.monotonic()
    p = subprocess.run([a.weft, "sm", "--once", "--state-dir", os.path.join(work, "state")], cwd=work,
                       env=env, capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - t0
    open(os.path.join(work, "sm.out"), "w").write(p.stdout + p.stderr[-20000:])
    if "SUBNET UP" not in p.stderr:
        raise b.Failure("weft sm --once: no SUBNET UP (rc %d)" % p.returncode)
    return p.stdout, weft_phases(p.stdout).get("total", float("nan")) / 1000, wall


def weft_bringup(a, net, sargs, work, sock):
    """(weft's total s, its process's wall s, SMPs) of one plain bring-up."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    with b.Ibsim(net, work, sock, extra_args=sargs):
        out, total, wall = sm_once(a, work, dict(os.environ, IBSIM_SOCKNAME=sock, LD_PRELOAD=b.UMAD2SIM))
        m = re.search(r"SMPs\s+.*total (\d+)", out)
        return total, wall, int(m.group(1)) if m else 0


def weft_and_ceiling(a, net, sargs, work, sock):
    """(weft's total s, weft's wall s, SMPs logged, {window: replay json}); weft's times
    are of the logged run, slowed by the shim."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    log = os.path.join(work, "smps.log")
    with b.Ibsim(net, work, sock, extra_args=sargs):
        env = dict(os.environ, IBSIM_SOCKNAME=sock, LD_PRELOAD=a.shim + " " + b.UMAD2SIM,
                   WEFT_MADCOUNT=os.path.join(work, "counts"), WEFT_MADLOG=log)
        _, total, wall = sm_once(a, work, env)
        smps = os.path.getsize(log) // 320
        replays = {}
        for window in (64, 256):
            r = subprocess.run([a.replay, log, str(window)], cwd=work,
                               env=dict(os.environ, IBSIM_SOCKNAME=sock, LD_PRELOAD=b.UMAD2SIM),
                               capture_output=True, text=True, timeout=3600)
            if r.returncode != 0:
                raise b.Failure("weft_smp_replay: rc %d: %s" % (r.returncode, r.stderr[-2000:]))
            replays[window] = json.loads(r.stdout.strip().splitlines()[-1])
        return total, wall, smps, replays


def opensm_bringup(net, sargs, work, sock):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    log = os.path.join(work, "opensm.log")
    with b.Ibsim(net, work, sock, extra_args=sargs):
        env = dict(os.environ, IBSIM_SOCKNAME=sock, LD_PRELOAD=b.UMAD2SIM, OSM_TMP_DIR=work, OSM_CACHE_DIR=work)
        t0 = time.monotonic()
        subprocess.run(["opensm", "-o", "-f", log, "-d", "2"], cwd=work, env=env, capture_output=True,
                       timeout=3600)
        secs = time.monotonic() - t0
        up = os.path.exists(log) and "SUBNET UP" in open(log, errors="replace").read()
        return secs if up else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--shim", required=True, help="libweft_madcount.so")
    ap.add_argument("--replay", required=True, help="weft_smp_replay")
    ap.add_argument("--huge", action="store_true", help="also the radix-56 tree (OpenSM takes ~8 min there)")
    ap.add_argument("--no-opensm", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only-huge", action="store_true", help="the radix-56 tree alone")
    ap.add_argument("--work", default="/tmp/weft-bench-ceiling")
    a = ap.parse_args()
    a.weft, a.shim, a.replay = (os.path.abspath(x) for x in (a.weft, a.shim, a.replay))
    os.makedirs(a.work, exist_ok=True)
    rows = []
    for name, spec in (HUGE if a.only_huge else FABRICS + (HUGE if a.huge else [])):
        runs_here = 1 if name in dict(HUGE) else a.runs
        net = os.path.join(a.work, name + ".net")
        subprocess.run([a.weft, "topo", spec, "-o", net], check=True, capture_output=True)
        sargs = ibsim_args(net)[0]
        runs = []
        for k in range(runs_here):
            sock = "weft-bench-ceiling-%d-%s-%d" % (os.getpid(), name, k)
            total, wall, plain_smps = weft_bringup(a, net, sargs, os.path.join(a.work, name, "weft-%d" % k), sock)
            _, _, smps, rep = weft_and_ceiling(a, net, sargs, os.path.join(a.work, name, "logged-%d" % k),
                                               sock + "-log")
            if plain_smps and plain_smps != smps:
                print("%s run %d: weft sent %d SMPs timed, %d logged" % (name, k + 1, plain_smps, smps))
            osm = float("nan") if a.no_opensm else opensm_bringup(net, sargs, os.path.join(a.work, name, "osm-%d" % k),
                                                                  sock + "-osm")
            runs.append((total, wall, smps, rep, osm))
            print("%s run %d: weft %.2f s (process %.2f s), %d SMPs; ceiling %.2f s (window 64, %d lost), "
                  "%.2f s (256, %d lost); OpenSM %.2f s"
                  % (name, k + 1, total, wall, smps, rep[64]["wall_s"], rep[64]["lost"], rep[256]["wall_s"],
                     rep[256]["lost"], osm), flush=True)
        med = lambda f: statistics.median(f(r) for r in runs)  # noqa: E731
        rows.append((name, med(lambda r: r[2]), med(lambda r: r[3][64]["wall_s"]), med(lambda r: r[3][256]["wall_s"]),
                     med(lambda r: r[0]), med(lambda r: r[4])))
    print()
    print("The rig's ceiling: the SMPs of weft's bring-up sent again with no SM logic between them "
          "(medians of %d run(s); the radix-56 tree: 1)" % a.runs)
    print()
    print("| fabric | SMPs | ceiling s (window 64) | ceiling s (256) | weft s | weft/ceiling | OpenSM s | "
          "OpenSM/ceiling |")
    print("|---|---|---|---|---|---|---|---|")
    for name, smps, c64, c256, w, o in rows:
        c = min(c64, c256)
        print("| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |" % (name, smps, c64, c256, w, w / c, o, o / c))


if __name__ == "__main__":
    b.run_main(main)
