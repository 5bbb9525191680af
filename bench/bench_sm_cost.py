#!/usr/bin/env python3
"""The SM's own cost per SMP, and its memory, beside OpenSM's.

1. In process (`weft sim --json`): the bring-up of the radix-56 3-level tree (3,920
   switches, 43,904 CAs, 4.1 million SMPs) and of the 444-switch tree on weft's simulator.
   Each sweep reports its process CPU, the part spent in the simulated devices and wire
   (timed inside the simulator's transport), the SM's own CPU (the rest) per SMP, and the
   process's peak resident set at SUBNET UP (the simulator's devices included: their
   LFTs alone hold 187 MB on the radix-56 tree). Targets: 1 us per SMP, 1.2 GB.
2. On ibsim, the 444-switch tree: `weft sm --once` and `opensm -o`, each with the
   umad2sim shim, their CPU (user + system, from the reaped child) over the SMPs they put
   on the wire (ibsim's PortXmitPkts at the SM's port). ibsim's own CPU is its process's,
   not counted. This is the like-for-like figure: OpenSM cannot run on weft's simulator.

Usage: bench_sm_cost.py --weft BUILD/app/weft [--runs N] [--no-huge] [--no-opensm]
"""
import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import ibsim_bringup as b  # noqa: E402
from bench_bringup import ibsim_args  # noqa: E402

TREE_444 = ("ft3-444sw", "ft3:pods=8,leaves=24,aggs=18,hosts=18,cores=6,links=2")
HUGE = ("ft3-3920sw", "ft3:pods=56,leaves=28,aggs=28,hosts=28,cores=28,radix=56")
TARGET_NS, TARGET_MIB = 1000.0, 1200.0


def in_process(weft, spec, work):
    """The cost object of one `weft sim --json` bring-up, with its SMPs."""
    p = subprocess.run([weft, "sim", "--topology", spec, "--json", "--state-dir", work],
                       cwd=work, capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        raise RuntimeError("weft sim %s: rc %d\n%s" % (spec, p.returncode, p.stderr[-2000:]))
    j = json.loads(p.stdout.splitlines()[0])
    if not j["subnet_up"] or not j["routes_verified"]:
        raise RuntimeError("weft sim %s: not up or routes wrong: %s" % (spec, p.stdout[:500]))
    return dict(j["cost"], smps=j["smps"])


def children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def on_ibsim(kind, weft, net, work, sargs):
    """(CPU seconds of the SM process, SMPs on the wire) of one bring-up on a fresh ibsim."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    sock = "weft-cost-%s-%d" % (kind, os.getpid())
    log = os.path.join(work, "sm.log")
    with b.Ibsim(net, work, sock, extra_args=sargs):
        env = dict(os.environ, IBSIM_SOCKNAME=sock, LD_PRELOAD=b.UMAD2SIM)
        if kind == "weft":
            cmd = [weft, "sm", "--once", "--state-dir", os.path.join(work, "state"), "--log-file", log]
        else:
            env.update(OSM_TMP_DIR=work, OSM_CACHE_DIR=work)
            cmd = ["opensm", "-o", "-f", log, "-d", "2"]
        # Only the SM is reaped between the two readings (ibsim is reaped after).
        before = children_cpu()
        p = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=3600)
        cpu = children_cpu() - before
        text = open(log, errors="replace").read() if os.path.exists(log) else ""
        if "SUBNET UP" not in text:
            raise RuntimeError("%s: rc %d, no SUBNET UP (see %s)" % (kind, p.returncode, log))
        pq = b.run(["perfquery", "-x"], work, sock, check=False).stdout
        m = re.search(r"PortXmitPkts:\.+(\d+)", pq)
        if not m:
            raise RuntimeError("%s: no PortXmitPkts from perfquery" % kind)
        return cpu, int(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--runs", type=int, default=3, help="runs per measure (medians); the radix-56 tree: 1")
    ap.add_argument("--no-huge", action="store_true", help="leave out the radix-56 tree (~1 min a run)")
    ap.add_argument("--no-opensm", action="store_true")
    a = ap.parse_args()
    weft = os.path.abspath(a.weft)
    work = tempfile.mkdtemp(prefix="weft-cost-")
    try:
        rows = []
        for name, spec in [TREE_444] + ([] if a.no_huge else [HUGE]):
            runs = []
            for i in range(1 if spec == HUGE[1] else a.runs):
                state = os.path.join(work, "state-%s-%d" % (name, i))
                os.makedirs(state)
                runs.append(in_process(weft, spec, state))
            for r in runs:
                print("%-12s in process: SM %.0f ms, simulator %.0f ms, %d SMPs, %.0f MiB" % (
                    name, r["sm_cpu_ms"], r["simulator_ms"], r["smps"], r["peak_rss_mib"]),
                    file=sys.stderr, flush=True)
            med = lambda k: statistics.median(r[k] for r in runs)  # noqa: E731
            rows.append((name, len(runs), runs[0]["smps"], med("sm_cpu_ms"), med("sm_ns_per_smp"),
                         med("simulator_ms"), med("peak_rss_mib"), med("peak_queued_smps")))
        print()
        print("In process (weft sim), medians: the SM's CPU apart from the simulator's, and the process's "
              "peak RSS (simulator included)")
        print("| fabric | runs | SMPs | SM CPU ms | SM ns/SMP (target %.0f) | simulator ms | peak RSS MiB "
              "(target %.0f) | most SMPs queued |" % (TARGET_NS, TARGET_MIB))
        print("|---|---|---|---|---|---|---|---|")
        for name, n, smps, sm, ns, sim, rss, q in rows:
            print("| %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %d |" % (name, n, smps, sm, ns, sim, rss, q))

        name, spec = TREE_444
        net = os.path.join(work, name + ".net")
        subprocess.run([weft, "topo", spec, "-o", net], check=True, capture_output=True)
        sargs, _, _ = ibsim_args(net)
        res = {}
        for kind in ["weft"] + ([] if a.no_opensm else ["opensm"]):
            got = [on_ibsim(kind, weft, net, os.path.join(work, kind), sargs) for _ in range(a.runs)]
            for cpu, smps in got:
                print("%-12s %-6s on ibsim: %.2f s CPU, %d SMPs" % (name, kind, cpu, smps),
                      file=sys.stderr, flush=True)
            res[kind] = (statistics.median(c for c, _ in got), statistics.median(s for _, s in got))
        print()
        print("On ibsim (umad2sim), %s, medians of %d: the SM process's CPU over the SMPs it sent" % (name, a.runs))
        print("| SM | CPU s | SMPs on the wire | ns per SMP |")
        print("|---|---|---|---|")
        for kind, (cpu, smps) in res.items():
            print("| %s | %.2f | %d | %.0f |" % (kind, cpu, smps, cpu * 1e9 / smps if smps else float("nan")))
        if "opensm" in res:
            w, o = (res[k][0] * 1e9 / res[k][1] for k in ("weft", "opensm"))
            print("\nweft's CPU per SMP / OpenSM's: %.2f" % (w / o))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
