#!/usr/bin/env python3
"""Counter sweeps, weft's PerfMgr against OpenSM 3.3.23's (`perfmgr TRUE`), in one run on
ibsim's 444-switch fat tree (3,456 CAs); and the topology page's load and render on it.

Each SM, on a fresh ibsim, at the first host, with the same options in OpenSM's names
(perfmgr TRUE, perfmgr_sweep_time_s 3, perfmgr_max_outstanding_queries 64: at
OpenSM's default of 500 both SMs stall on ibsim, whose socket queues cannot hold that
many replies in flight, so that a send blocks while the replies wait): the madcount shim in front of umad2sim sees every PerfMgt request either SM
writes, and groups them into bursts (a write 500 ms or more after the one before
starts one): a counter sweep's time is its first write to its last, its MADs the
burst's size. Each SM is watched for --window s from its first PerfMgt MAD. The first
sweep (ClassPortInfo too) is shown apart; the steady figure is the median of the next
ones. weft's own log line gives the ports it read.

The page: headless Chromium loads http://.../ from `weft sm` on that fabric (hosts
folded per leaf); the time from navigation to the drawing done, and the page's own
render time (layout and SVG), medians of 3 loads."""
import argparse
import base64
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, HERE)
import ibsim_bringup as b  # noqa: E402
from bench_bringup import ibsim_args  # noqa: E402
from cdp import Browser  # noqa: E402
from ibsim_rest import free_port  # noqa: E402

SPEC = "ft3:pods=8,leaves=24,aggs=18,hosts=18,cores=6,links=2"  # 444 switches, 3,456 CAs
SLOTS = ("smps", "gets", "sets", "lft_sets", "portinfo_sets", "switchinfo_sets", "other_sets",
         "perf_mads", "perf_bursts", "burst_start_ns", "last_ns", "burst_mads")
OPTIONS = "perfmgr TRUE\nperfmgr_sweep_time_s 3\nperfmgr_max_outstanding_queries 64\n"
GAP_NS = 500_000_000


def counts(path):
    try:
        data = open(path, "rb").read()
    except FileNotFoundError:
        return None
    if len(data) < 8 * len(SLOTS):
        return None
    return dict(zip(SLOTS, struct.unpack("<%dQ" % len(SLOTS), data[:8 * len(SLOTS)])))


def bursts(path, window, first_by):
    """The PerfMgt bursts (counter sweeps) the shim saw within `window` s from the first
    PerfMgt write (expected by time `first_by`): [(seconds, MADs)], finished ones only
    (samples every 10 ms; a burst ends when the next starts or its last write is a gap
    old)."""
    out, prev, t_first = [], None, None
    while True:
        time.sleep(0.01)
        c = counts(path)
        if not c or c["perf_bursts"] == 0:
            if time.time() > first_by:
                break
            continue
        if t_first is None:
            t_first = time.time()
        if prev and c["perf_bursts"] != prev["perf_bursts"]:
            out.append(((prev["last_ns"] - prev["burst_start_ns"]) / 1e9, prev["burst_mads"]))
        prev = c
        if time.time() - t_first >= window:
            break
    if prev and time.clock_gettime_ns(time.CLOCK_MONOTONIC) - prev["last_ns"] >= GAP_NS:
        out.append(((prev["last_ns"] - prev["burst_start_ns"]) / 1e9, prev["burst_mads"]))
    return out


def run_sm(kind, a, net, sargs, host):
    work = os.path.join(a.scratch, kind)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    sock = "weft-bench-perf-%d-%s" % (os.getpid(), kind)
    log = os.path.join(work, kind + ".log")
    cnt = os.path.join(work, kind + ".counts")
    conf = os.path.join(work, kind + ".conf")
    with open(conf, "w") as f:
        f.write(OPTIONS)
    if kind == "weft":
        cmd = [a.weft, "sm", "--state-dir", os.path.join(work, "state"), "--log-file", log, "--config", conf,
               "--sweep-interval", "30"]
    else:
        cmd = ["opensm", "-F", conf, "-f", log, "-d", "2", "-s", "30"]
    env = dict(os.environ, IBSIM_SOCKNAME=sock, LD_PRELOAD=a.shim + " " + b.UMAD2SIM, SIM_HOST=host,
               WEFT_MADCOUNT=cnt, OSM_TMP_DIR=work, OSM_CACHE_DIR=work)
    with b.Ibsim(net, work, sock, extra_args=sargs):
        time.sleep(1)
        p = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        try:
            got = bursts(cnt, a.window, time.time() + 300)
            if not got:
                raise b.Failure("%s finished no counter sweep in %d s" % (kind, a.window))
            ports = None
            if kind == "weft":
                lines = re.findall(r"counter sweep \d+: (\d+) of (\d+) ports read, (\d+) MADs, (\d+) failed",
                                   open(log, errors="replace").read())
                if not lines:
                    raise b.Failure("weft logged no counter sweep")
                read, total, _, failed = map(int, lines[-1])
                if read != total or failed:
                    raise b.Failure("weft read %d of %d ports (%d failed)" % (read, total, failed))
                ports = total
            return got, ports
        finally:
            b.stop_process(p)


def page_load(a, net, sargs, host):
    work = os.path.join(a.scratch, "page")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    sock = "weft-bench-page-%d" % os.getpid()
    port = free_port()
    log = os.path.join(work, "weft.log")
    state = os.path.join(work, "state")
    env = dict(os.environ, IBSIM_SOCKNAME=sock, LD_PRELOAD=b.UMAD2SIM, SIM_HOST=host)
    with b.Ibsim(net, work, sock, extra_args=sargs):
        time.sleep(1)
        p = subprocess.Popen([a.weft, "sm", "--state-dir", state, "--log-file", log, "--sweep-interval", "30",
                              "--rest", "127.0.0.1:%d" % port], cwd=work, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.time() + 300
            while "SUBNET UP" not in (open(log, errors="replace").read() if os.path.exists(log) else ""):
                if time.time() > deadline or p.poll() is not None:
                    raise b.Failure("weft did not bring the fabric up for the page")
                time.sleep(0.1)
            pw = open(os.path.join(state, "rest-admin-password")).read().strip()[len("admin:"):]
            auth = "Basic " + base64.b64encode(("admin:" + pw).encode()).decode()
            loads, renders, counts_ = [], [], None
            with Browser(work) as br:
                page = br.page(authorization=auth)
                for _ in range(3):
                    page.goto("about:blank")
                    t0 = time.time()
                    page.goto("http://127.0.0.1:%d/" % port)
                    page.wait("document.body && document.body.dataset.rendered === '1'", 60, step=0.01)
                    loads.append(time.time() - t0)
                    renders.append(page.eval("window.weftRendered.ms") / 1000)
                    counts_ = page.eval("[document.querySelectorAll('[data-guid][data-type=switch]').length, "
                                        "document.querySelectorAll('[data-fold]').length, "
                                        "document.querySelectorAll('[data-link]').length]")
                page.screenshot(os.path.join(work, "topology-444.png"))
            return statistics.median(loads), statistics.median(renders), counts_
        finally:
            b.stop_process(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--shim", required=True, help="libweft_madcount.so")
    ap.add_argument("--scratch", default="/tmp/weft-bench-perf")
    ap.add_argument("--window", type=int, default=60, help="seconds each SM is watched from its first PerfMgt MAD")
    a = ap.parse_args()
    a.shim = os.path.abspath(a.shim)
    a.weft = os.path.abspath(a.weft)
    shutil.rmtree(a.scratch, ignore_errors=True)
    os.makedirs(a.scratch)
    net = os.path.join(a.scratch, "ft3.net")
    b.run([a.weft, "topo", SPEC, "-o", net], a.scratch, "", preload=False)
    hosts = re.findall(r'^Ca\s+\d+\s+"([^"]+)"', open(net).read(), re.M)
    sargs = ibsim_args(net)[0]
    res = {}
    for kind in ("opensm", "weft"):
        got, ports = run_sm(kind, a, net, sargs, hosts[0])
        rest = got[1:] or got
        res[kind] = {"first": got[0], "sweeps": len(got), "ports": ports,
                     "steady_s": statistics.median(s for s, _ in rest),
                     "steady_mads": statistics.median(m for _, m in rest)}
        print("%-6s counter sweeps (s/MADs): %s" % (kind, ", ".join("%.3f/%d" % g for g in got)), flush=True)
    print()
    print("Counter sweeps on the 444-switch tree (3,456 CAs), perfmgr_sweep_time_s 3, 64 outstanding, each SM")
    print("watched %d s from its first PerfMgt MAD; PerfMgt requests as the madcount shim saw them leave it;" % a.window)
    print("steady = median of the sweeps after the first")
    print("| SM | ports read | sweeps in %d s | first sweep: s / MADs | steady sweep: s | MADs per steady sweep |"
          % a.window)
    print("|---|---|---|---|---|---|")
    for kind in ("opensm", "weft"):
        r = res[kind]
        print("| %s | %s | %d | %.3f / %d | %.3f | %d |" % (
            "OpenSM 3.3.23" if kind == "opensm" else "weft", r["ports"] if r["ports"] else "(not logged)",
            r["sweeps"], r["first"][0], r["first"][1], r["steady_s"], r["steady_mads"]))
    o, w = res["opensm"], res["weft"]
    print("weft / OpenSM: steady sweep time %.3fx (OpenSM's first burst is its ClassPortInfo queries alone; "
          "weft's first sweep reads the counters too)" % (
              w["steady_s"] / o["steady_s"] if o["steady_s"] else float("nan")))
    load, render, els = page_load(a, net, sargs, hosts[0])
    print()
    print("Topology page on the 444-switch tree (weft; OpenSM has none), headless Chromium, median of 3 loads")
    print("| elements: switches / host folds / links | load to drawn (s) | layout + SVG (s) |")
    print("|---|---|---|")
    print("| %d / %d / %d | %.3f | %.3f |" % (els[0], els[1], els[2], load, render))


if __name__ == "__main__":
    main()
