#!/usr/bin/env python3
"""Routing at scale: `weft route --no-grade` on the radix-56 3-level fat tree
(3,920 switches, 43,904 CAs, 47,824 LIDs), each engine's compute time (its own
report), its compute CPU (the process's CPU time over the computation, every
thread's: the same work on one core; apart, its user and system parts: the system
part is mostly the kernel zeroing the pages the fresh tables first touch), wall time of the whole process (the net
file read and LIDs assigned too) and peak memory (the process's maximum resident
set, from wait4).

Targets (issue 32): minhop, updn, dnup and ftree compute in <= 0.5 s on one core
(their compute CPU); dfsssp in <= 10 s (both cores may be used: its compute
time); every engine's peak <= 1 GiB.

A floor line: a fresh process filling the tables' bytes once (one per switch and
LID), with glibc's huge-page malloc and without: what fresh memory alone costs on
this machine.

The fabric is `weft topo`'s ft3:pods=56,leaves=28,aggs=28,hosts=28,cores=28,radix=56
written as an ibsim net file, or any topology file given with --topology.

With --opensm, OpenSM's minhop routes the same net file on ibsim in the same run:
its time is from its log, "Entering MASTER state" to "minhop tables configured on
all switches" (bench_routing.py's measure; it includes queuing the LFT blocks, so
it is an upper bound). That takes about 6 minutes on the radix-56 tree.

With --baseline OTHER/weft, each engine's runs alternate with runs of that binary
(a build from before a change) on the same net file, and a second table prints both
medians and their ratio: user CPU for every engine, and dfsssp's compute time too (its
target figure, on both cores). This VM's speed swings by a third within minutes, so a
change is measured against the code before it in the same minutes, run for run.
--engines picks some of the engines (dfsssp alone: --engines dfsssp --dfsssp-runs 3).

Usage: bench_scale.py --weft BUILD/app/weft [--topology FILE] [--runs N] [--opensm]
                      [--baseline OTHER/weft] [--engines E,E...] [--dfsssp-runs N]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = "ft3:pods=56,leaves=28,aggs=28,hosts=28,cores=28,radix=56"
FAST = ["minhop", "updn", "dnup", "ftree"]
# Per engine: (the figure held to the target, its limit in seconds).
TARGET = {"minhop": ("cpu", 0.5), "updn": ("cpu", 0.5), "dnup": ("cpu", 0.5), "ftree": ("cpu", 0.5),
          "dfsssp": ("compute", 10.0)}
PEAK_MIB = 1024
# weft route's "malloc_huge_pages" per run: whether it ran with glibc's huge-page malloc
# (it runs itself again so where the kernel has transparent huge pages; app/main.cpp).
HUGE_PAGES = set()


def run_measured(weft, topo, engine):
    """(compute ms, compute CPU ms, its user and system ms, wall s, peak MiB, VLs, progress lines) of one
    `weft route --no-grade
    --json --progress` run; the child is reaped with wait4 for its resource usage."""
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        err = os.open(os.path.join(tempfile.gettempdir(), "weft-scale-%d.err" % os.getpid()),
                      os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(err, 2)
        out = os.open(os.path.join(tempfile.gettempdir(), "weft-scale-%d.json" % os.getpid()),
                      os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, 1)
        os.execv(weft, [weft, "route", "--topology", topo, "--engine", engine, "--no-grade", "--json", "--progress"])
    _, status, usage = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    path = os.path.join(tempfile.gettempdir(), "weft-scale-%d.json" % pid)
    try:
        text = open(path).read()
        progress = open(path[:-5] + ".err").read().splitlines()
    finally:
        os.unlink(path)
        os.unlink(path[:-5] + ".err")
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("weft route --engine %s failed (exit %d)" % (engine, os.waitstatus_to_exitcode(status)))
    rows = json.loads(text)
    row = rows[0] if isinstance(rows, list) else rows
    if row.get("status") != "ok":
        raise RuntimeError("%s: %s" % (engine, row.get("reason", row)))
    HUGE_PAGES.add(row.get("malloc_huge_pages"))
    return (row["compute_ms"], row["compute_cpu_ms"], row.get("compute_user_ms", float("nan")),
            row.get("compute_sys_ms", float("nan")), wall, usage.ru_maxrss / 1024, row.get("vls"), progress)


TOUCH = """
import ctypes, resource, sys
n = int(sys.argv[1])
buf = bytearray(n)  # calloc: pages not yet touched
ctypes.memset((ctypes.c_char * n).from_buffer(buf), 0xFF, n)
u = resource.getrusage(resource.RUSAGE_SELF)
print(u.ru_utime + u.ru_stime)
"""


def first_touch(nbytes, huge):
    """CPU seconds of a fresh process that fills `nbytes` once (the fresh tables' floor on
    this machine), with glibc's huge-page malloc or without; less the same process with
    nothing to fill."""
    env = dict(os.environ, GLIBC_TUNABLES="glibc.malloc.hugetlb=%d" % (1 if huge else 0))
    def cpu(n):
        return float(subprocess.run([sys.executable, "-c", TOUCH, str(n)], env=env, capture_output=True,
                                    text=True, check=True).stdout)
    return cpu(nbytes) - cpu(1)


def opensm_minhop(net, scratch):
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
    import ibsim_bringup as b  # noqa: E402
    import bench_bringup as bb  # noqa: E402
    import bench_routing as br  # noqa: E402
    sargs, _, _ = bb.ibsim_args(net)
    work = os.path.join(scratch, "opensm")
    os.makedirs(work, exist_ok=True)
    sock = "weft-bench-scale-%d" % os.getpid()
    log = os.path.join(work, "osm.log")
    with b.Ibsim(net, work, sock, extra_args=sargs):
        env = dict(os.environ, IBSIM_SOCKNAME=sock, LD_PRELOAD=b.UMAD2SIM, OSM_TMP_DIR=work, OSM_CACHE_DIR=work)
        subprocess.run(["opensm", "-o", "-R", "minhop", "-f", log, "-d", "2"], cwd=work, env=env,
                       capture_output=True, text=True, timeout=7200)
    secs = br.routing_seconds(open(log, errors="replace").read())
    if secs is None:
        raise RuntimeError("OpenSM did not configure its tables; see " + log)
    return secs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--topology", help="a topology file (default: weft topo " + SPEC + ")")
    ap.add_argument("--runs", type=int, default=3, help="runs of each fast engine")
    ap.add_argument("--dfsssp-runs", type=int, default=1, help="runs of dfsssp (about 20 s each)")
    ap.add_argument("--no-dfsssp", action="store_true", help="skip dfsssp")
    ap.add_argument("--engines", default=",".join(FAST + ["dfsssp"]),
                    help="engines to run, comma-separated (default: all five)")
    ap.add_argument("--opensm", action="store_true", help="also time OpenSM's minhop on ibsim (minutes)")
    ap.add_argument("--no-grade", action="store_true",
                    help="skip grading minhop's and updn's tables (eBB, busiest link; ~2 min each)")
    ap.add_argument("--baseline", help="another weft binary whose runs alternate with --weft's "
                    "(medians side by side)")
    ap.add_argument("--scratch", default=os.path.join(tempfile.gettempdir(), "weft-bench-scale"))
    a = ap.parse_args()
    os.makedirs(a.scratch, exist_ok=True)
    topo = a.topology
    if not topo:
        topo = os.path.join(a.scratch, "ft56.net")
        subprocess.run([a.weft, "topo", SPEC, "-o", topo], check=True)
    chosen = [e.strip() for e in a.engines.split(",") if e.strip()]
    unknown = [e for e in chosen if e not in TARGET]
    if not chosen:
        ap.error("--engines names no engine; choose among %s" % ", ".join(TARGET))
    if unknown:
        ap.error("--engines: unknown engine(s) %s; choose among %s" % (", ".join(unknown), ", ".join(TARGET)))
    if a.no_dfsssp and "dfsssp" in chosen:
        chosen.remove("dfsssp")
        if not chosen:
            ap.error("--no-dfsssp leaves no engine of --engines to run")
    if a.runs < 1 or a.dfsssp_runs < 1:
        ap.error("--runs and --dfsssp-runs must be at least 1")
    engines = [(e, a.dfsssp_runs if e == "dfsssp" else a.runs) for e in TARGET if e in chosen]
    print("Routing at scale on %s (%d cores)\n" % (topo, os.cpu_count()))
    print("| engine | run | compute s | compute CPU s | user s | system s | wall s | peak MiB | VLs | target |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    held, peaks, compute, phases = {}, {}, {}, {}
    user, base_user = {}, {}  # per engine: user CPU seconds of each run (--baseline)
    base_compute = {}  # per engine: the baseline's compute seconds of each run
    progress_lines = []
    for engine, runs in engines:
        for i in range(runs):
            if a.baseline:
                bm = run_measured(a.baseline, topo, engine)
                base_user.setdefault(engine, []).append(bm[2] / 1000)
                base_compute.setdefault(engine, []).append(bm[0] / 1000)
            ms, cpu_ms, user_ms, sys_ms, wall, peak, vls, progress = run_measured(a.weft, topo, engine)
            user.setdefault(engine, []).append(user_ms / 1000)
            what, limit = TARGET[engine]
            held.setdefault(engine, []).append((cpu_ms if what == "cpu" else ms) / 1000)
            peaks[engine] = max(peaks.get(engine, 0), peak)
            compute.setdefault(engine, []).append(ms / 1000)
            phases[engine] = [line for line in progress if line.startswith("weft: %s: " % engine)]
            progress_lines = progress
            print("| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.0f | %s | %s <= %g s |" % (
                engine, i + 1, ms / 1000, cpu_ms / 1000, user_ms / 1000, sys_ms / 1000, wall, peak, vls,
                what, limit))
            sys.stdout.flush()
    osm = None
    if a.opensm:
        osm = opensm_minhop(topo, a.scratch)
        print("| opensm minhop | 1 | %.2f (log) | | | | | | 1 | |" % osm)
    print()
    print("glibc's huge-page malloc (glibc.malloc.hugetlb=1): %s" % (
        "yes" if HUGE_PAGES == {True} else "no" if HUGE_PAGES == {False} else "mixed"))
    for engine, xs in held.items():
        what, limit = TARGET[engine]
        med = sorted(xs)[len(xs) // 2]
        print("%s: median %s %.2f s (of %d), target <= %g s: %s; peak %.0f MiB, target <= %d: %s" % (
            engine, what, med, len(xs), limit, "met" if med <= limit else "NOT met", peaks[engine], PEAK_MIB,
            "met" if peaks[engine] <= PEAK_MIB else "NOT met"))
    if base_user:
        print("\nAlternating runs against %s (medians of the runs each; range):\n" % a.baseline)
        print("| engine | runs | figure | baseline | this | this / baseline |")
        print("|---|---|---|---|---|---|")

        def ratio_row(engine, figure, base, this):
            b, t = sorted(base), sorted(this)
            print("| %s | %d | %s | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) | %.2f |" % (
                engine, len(t), figure, b[len(b) // 2], b[0], b[-1], t[len(t) // 2], t[0], t[-1],
                t[len(t) // 2] / b[len(b) // 2]))
        for engine, xs in base_user.items():
            if engine == "dfsssp":
                ratio_row(engine, "compute s", base_compute[engine], compute[engine])
            ratio_row(engine, "user CPU s", xs, user[engine])
    if osm is not None and "minhop" in compute:
        slowest = max(compute["minhop"])
        print("minhop: OpenSM %.1f s, weft %.2f s (slowest compute): weft %.0f times faster" % (osm, slowest,
                                                                                             osm / slowest))
    # The floor under every engine's figure: the fresh tables' bytes (one byte per LID
    # and switch: LIDs 1..switches+CAs, as weft assigns them) filled once.
    sw_ca = re.search(r"loaded (\d+) switches, (\d+) CAs", "\n".join(progress_lines))
    if sw_ca:
        switches, cas = int(sw_ca.group(1)), int(sw_ca.group(2))
        nbytes = switches * (switches + cas + 1)
        for huge in (True, False):
            xs = sorted(first_touch(nbytes, huge) for _ in range(3))
            print("floor: filling %.0f MB once (the tables' size) in a fresh process, %s huge pages: "
                  "%.2f s of CPU (median of 3; %.2f-%.2f)" % (nbytes / 1e6, "with" if huge else "without",
                                                              xs[1], xs[0], xs[2]))
    if not a.no_grade and {"minhop", "updn"} <= set(chosen):
        # The up/down engine has every shortest path of the tree to choose from, as minhop
        # has: its tables graded beside minhop's (weft route's analyzer, 100 bisections).
        print("\n| engine | eBB | busiest link | mean link load |")
        print("|---|---|---|---|")
        graded = {}
        for engine in ("minhop", "updn"):
            p = subprocess.run([a.weft, "route", "--topology", topo, "--engine", engine, "--json"],
                               capture_output=True, text=True, timeout=3600)
            row = json.loads(p.stdout)[0]
            graded[engine] = row
            print("| %s | %.4f | %d | %.1f |" % (engine, row["ebb"], row["max_link_load"], row["mean_link_load"]))
            sys.stdout.flush()
        m, u = graded["minhop"], graded["updn"]
        print("\nupdn: eBB %.4f against minhop's %.4f, target >= minhop's: %s; busiest link %.2fx minhop's" % (
            u["ebb"], m["ebb"], "met" if u["ebb"] >= m["ebb"] else "NOT met",
            u["max_link_load"] / max(1, m["max_link_load"])))
    if "dfsssp" in phases:
        print("\ndfsssp's phases (weft route --progress):")
        for line in phases["dfsssp"]:
            print("  " + line)


if __name__ == "__main__":
    main()
