#!/usr/bin/env python3
"""Bring-up benchmark: weft and OpenSM on the same ibsim fabrics, in one run.

For each fabric and each SM: a fresh ibsim (limits raised as the fabric
needs), the SM run once (`weft sm --once`, `opensm -o`), then:
  - wall seconds from the SM's start until it exits with the subnet up
    (median of --repeat runs);
  - SMPs on the wire: ibsim's PortXmitPkts at the SM's port (the same counter
    for both SMs; SMPs to the SM's own node never leave the port);
  - a check that the subnet really is up (every linked port ACTIVE, read back
    with iblinkinfo), so a fast failure does not count as a fast bring-up.
It also prints the least number of SMPs a read-everything, write-once SM
needs on that fabric, for scale, and weft's own phase times (its summary's
"time ms" line) of its median run. --huge adds the radix-56 3-level tree (one run
of each SM: OpenSM takes about 8 minutes there). --window-sweep times weft alone
on the 444-switch tree at SMP windows (max_wire_smps) 4 to 256.
Usage: bench_bringup.py --weft BUILD/app/weft [--fabrics a,b] [--repeat N] [--huge] [--window-sweep]
"""
import argparse
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import ibsim_bringup as b  # noqa: E402

FABRICS = [
    ("ft2-36sw", "ft2:leaves=18,spines=18,hosts=18"),                      # 36 switches, 324 CAs
    ("torus-4x4x4", "torus:dims=4x4x4,hosts=2"),                           # 64 switches, 128 CAs
    ("random-100", "random:switches=100,degree=8,hosts=4,seed=1"),         # 100 switches, 400 CAs
    ("ft3-222sw", "ft3:pods=4,leaves=24,aggs=18,hosts=18,cores=3,links=4"),  # 222 switches, 1728 CAs
    ("ft3-444sw", "ft3:pods=8,leaves=24,aggs=18,hosts=18,cores=6,links=2"),  # 444 switches, 3456 CAs
]
HUGE = [("ft3-3920sw", "ft3:pods=56,leaves=28,aggs=28,hosts=28,cores=28,radix=56")]


def ibsim_args(net):
    sw = ca = ports = 0
    for line in open(net):
        m = re.match(r"^(Switch|Ca|Hca)\s+(\d+)", line)
        if m:
            n = int(m.group(2))
            if m.group(1) == "Switch":
                sw, ports = sw + 1, ports + n + 1
            else:
                ca, ports = ca + 1, ports + n
    args = []
    if sw > 256:
        args += ["-S", str(sw + 16)]
    if sw + ca > 2048:
        args += ["-N", str(sw + ca + 16)]
    if ports > 13312:
        args += ["-P", str(ports + 64)]
    lids = sw + ca
    if lids >= 30720:
        args += ["-L", str((lids // 64 + 2) * 64)]
    return args, sw, ca


def min_smps(net):
    """SMPs a read-everything, write-once SM needs: discovery (NodeInfo across every link
    and at the SM's node, NodeDescription per node, SwitchInfo per switch, PortInfo per
    switch port and per linked CA port), then PortInfo Sets (LIDs + ARMED, then ACTIVE) per
    linked port end and switch port 0, one SwitchInfo Set and the LFT blocks up to the top
    LID per switch; and each end port's P_Key table read once (ibsim's PartitionCap: 64 on
    a CA port, 2 blocks of 32; 8 on a switch, 1 block), since partitions cannot be written
    right without knowing what a port holds."""
    sw_ports = ca_ports = ends = switches = cas = 0
    kind = None
    for line in open(net):
        m = re.match(r"^(Switch|Ca|Hca)\s+(\d+)", line)
        if m:
            kind = "sw" if m.group(1) == "Switch" else "ca"
            if kind == "sw":
                switches += 1
                sw_ports += int(m.group(2)) + 1
            else:
                cas += 1
            continue
        if line.startswith("[") and kind:
            ends += 1  # each link is listed from both ends
            ca_ports += kind == "ca"
    links = ends // 2
    blocks = switches * ((switches + ca_ports) // 64 + 1)
    discovery = (links + 1) + (switches + cas) + switches + sw_ports + ca_ports
    program = (ends + switches) + switches + blocks + ends
    pkeys = 2 * ca_ports + switches
    return discovery + program + pkeys


PHASES = ("discovery", "LIDs", "routing", "programming", "activation", "total")


def weft_phases(stdout):
    """weft's own phase times (ms) from its summary's "time ms" line."""
    m = re.search(r"time ms\s+" + r",\s+".join(r"%s ([\d.]+)" % p for p in PHASES), stdout)
    return {p: float(m.group(i + 1)) for i, p in enumerate(PHASES)} if m else {}


def run_sm(kind, weft, extra, net, work, sock, sargs):
    """One bring-up on a fresh ibsim. Returns (seconds, smps_on_wire, up, note, weft's phases)."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    log = os.path.join(work, "sm.log")
    with b.Ibsim(net, work, sock, extra_args=sargs):
        env = dict(os.environ, IBSIM_SOCKNAME=sock, LD_PRELOAD=b.UMAD2SIM)
        if kind == "weft":
            cmd = [weft, "sm", "--once", "--state-dir", os.path.join(work, "state"), "--log-file", log] + extra
        else:
            env.update(OSM_TMP_DIR=work, OSM_CACHE_DIR=work)
            cmd = ["opensm", "-o", "-f", log, "-d", "2"]
        t0 = time.monotonic()
        p = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=3600)
        secs = time.monotonic() - t0
        open(os.path.join(work, "sm.stdout"), "w").write(p.stdout + p.stderr[-20000:])
        text = open(log, errors="replace").read() if os.path.exists(log) else ""
        phases = weft_phases(p.stdout) if kind == "weft" else {}
        if "SUBNET UP" not in text:
            return secs, 0, False, "rc %d, no SUBNET UP" % p.returncode, phases
        pq = b.run(["perfquery", "-x"], work, sock, check=False).stdout
        m = re.search(r"PortXmitPkts:\.+(\d+)", pq)
        links = b.run(["iblinkinfo"], work, sock, timeout=1800).stdout
        linked = [l for l in links.splitlines() if "==>" in l and '""' not in l]
        active = sum(1 for l in linked if "Active/" in l)
        up = bool(linked) and active == len(linked)
        return (secs, int(m.group(1)) if m else 0, up, "" if up else "%d of %d ports ACTIVE" % (active, len(linked)),
                phases)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--fabrics", default="", help="comma-separated names (default: all but the huge one)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--huge", action="store_true", help="add the radix-56 3-level tree (OpenSM takes ~8 min)")
    ap.add_argument("--work", default="/tmp/weft-bench")
    ap.add_argument("--weft-args", default="", help="extra weft sm arguments, e.g. '--window 64'")
    ap.add_argument("--no-opensm", action="store_true")
    ap.add_argument("--window-sweep", action="store_true",
                    help="also time weft on the 444-switch tree at max_wire_smps 4, 16, 64, 128, 256")
    a = ap.parse_args()
    fabrics = FABRICS + (HUGE if a.huge else [])
    if a.fabrics:
        want = a.fabrics.split(",")
        fabrics = [f for f in FABRICS + HUGE if f[0] in want]
    weft = os.path.abspath(a.weft)
    extra = a.weft_args.split()
    os.makedirs(a.work, exist_ok=True)
    sms = ["weft"] if a.no_opensm else ["weft", "opensm"]
    rows = []
    for name, spec in fabrics:
        net = os.path.join(a.work, name + ".net")
        subprocess.run([weft, "topo", spec, "-o", net], check=True, capture_output=True)
        sargs, sw, ca = ibsim_args(net)
        row = {"fabric": name, "sw": sw, "ca": ca, "min": min_smps(net)}
        repeat = 1 if (name, spec) in HUGE else a.repeat
        row["runs"] = repeat
        for kind in sms:
            row[kind] = measure(kind, weft, extra, net, name, a.work, sargs, repeat)
        rows.append(row)
    print()
    print("Bring-up on ibsim, median of %d runs (the radix-56 tree: 1); SMPs = ibsim PortXmitPkts at the SM's "
          "port" % a.repeat)
    print("| fabric | switches | CAs | weft s | OpenSM s | weft/OpenSM | weft SMPs | OpenSM SMPs | min SMPs |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        wt, ws, wn, _ = r["weft"]
        ot, os_, on, _ = r.get("opensm", (math.nan, 0, [], {}))
        ratio = wt / ot if ot == ot and ot > 0 else math.nan
        notes = ["weft: " + x for x in wn] + ["opensm: " + x for x in on]
        print("| %s | %d | %d | %.2f | %.2f | %.2f | %d | %d | %d |%s" % (
            r["fabric"], r["sw"], r["ca"], wt, ot, ratio, ws, os_, r["min"],
            " NOT UP: " + "; ".join(notes) if notes else ""))
    print()
    print("weft's phases in its median run (its summary's time ms line), ms")
    print("| fabric | " + " | ".join(PHASES) + " |")
    print("|---|" + "---|" * len(PHASES))
    for r in rows:
        ph = r["weft"][3]
        print("| %s | %s |" % (r["fabric"], " | ".join("%.1f" % ph.get(p, math.nan) for p in PHASES)))
    if a.window_sweep:
        window_sweep(weft, extra, a.work, a.repeat)


def measure(kind, weft, extra, net, name, work, sargs, repeat):
    """(median seconds, SMPs, notes, phases of the median run) over `repeat` bring-ups."""
    runs, notes = [], []
    for i in range(repeat):
        sock = "weft-bench-%s-%s-%d-%d" % (name, kind, os.getpid(), i)
        secs, n, up, note, phases = run_sm(kind, weft, extra, net, os.path.join(work, name, kind), sock, sargs)
        if not up:
            notes.append(note)
        runs.append((secs, n, phases))
        print("%-12s %-6s %8.2f s %9d SMPs %s" % (name, kind, secs, n, note), file=sys.stderr, flush=True)
    runs.sort(key=lambda r: r[0])
    secs, n, phases = runs[len(runs) // 2]
    return secs, n, notes, phases


def window_sweep(weft, extra, work, repeat):
    name, spec = [f for f in FABRICS if f[0] == "ft3-444sw"][0]
    net = os.path.join(work, name + ".net")
    subprocess.run([weft, "topo", spec, "-o", net], check=True, capture_output=True)
    sargs, _, _ = ibsim_args(net)
    print()
    print("weft on %s at each SMP window (max_wire_smps), median of %d runs" % (name, repeat))
    print("| window | weft s | SMPs |")
    print("|---|---|---|")
    for window in (4, 16, 64, 128, 256):
        secs, n, notes, _ = measure("weft", weft, extra + ["--window", str(window)], net, "%s-w%d" % (name, window),
                                    work, sargs, repeat)
        print("| %d | %.2f | %d |%s" % (window, secs, n, " NOT UP: " + "; ".join(notes) if notes else ""), flush=True)

if __name__ == "__main__":
    main()
