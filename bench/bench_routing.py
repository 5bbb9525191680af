#!/usr/bin/env python3
"""Routing benchmark: weft's engines and OpenSM's on the same fabrics, graded by
the same analyzer, in one run.

For each fabric: ibsim runs the net file; for each OpenSM engine, `opensm -o -R
ENGINE` brings the fabric up, and its tables are read back with dump_fts (plus
the block dump_fts skips); ibnetdiscover gives the topology with OpenSM's LIDs.
Then `weft route --topology <that ibnetdiscover output>` computes weft's engines
on the very same fabric and LIDs and grades them, and OpenSM's read-back tables
(`--lfts`), with the same code: eBB (100 random bisections), shift all-to-all
congestion, busiest link, stretch, VLs, channel-dependency-graph check.

Compute time: weft's is the engine alone (weft route); OpenSM's is from its log,
"Entering MASTER state" to "<engine> tables configured on all switches", which
also includes queuing the LFT blocks: an upper bound on its routing time.
OpenSM's layered engines (dfsssp, lash) keep path SLs in its SA, which the dump
does not show: their VL count comes from the log and their CDG is not graded.
Usage: bench_routing.py --weft BUILD/app/weft [--fabrics a,b] [--engines ...]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import ibsim_bringup as b  # noqa: E402
import bench_bringup as bb  # noqa: E402

FABRICS = [
    ("ft2-36sw", "ft2:leaves=18,spines=18,hosts=18"),
    ("ft3-222sw", "ft3:pods=4,leaves=24,aggs=18,hosts=18,cores=3,links=4"),
    ("6-ary-3-tree", "ft3:pods=6,leaves=6,aggs=6,hosts=6,cores=6"),
    # The same tree with 6 inter-switch links taken out (ibsim_bringup.degrade_net, seed 1).
    ("6-ary-3-tree-minus6", "ft3:pods=6,leaves=6,aggs=6,hosts=6,cores=6", 6),
    ("torus-4x4x4", "torus:dims=4x4x4,hosts=2"),
    ("dragonfly-36sw", "dragonfly:groups=9,routers=4,global=2,hosts=2"),
    ("random-100", "random:switches=100,degree=8,hosts=4,seed=1"),
]
WEFT_ENGINES = ["minhop", "updn", "dnup", "ftree", "dfsssp"]
OPENSM_ENGINES = ["minhop", "updn", "dnup", "ftree", "dfsssp", "lash"]


def log_time(line):
    m = re.match(r"^(\w+ +\d+ [\d:]+) (\d{6}) ", line)
    if not m:
        return None
    t = datetime.strptime("2000 " + m.group(1), "%Y %b %d %H:%M:%S")
    return t.timestamp() + int(m.group(2)) / 1e6


def routing_seconds(log_text):
    """OpenSM's routing time from its log: "Entering MASTER state" to "<engine> tables
    configured on all switches" (which includes queuing the LFT blocks: an upper
    bound), or None when either line is missing."""
    t0 = t1 = None
    for line in log_text.splitlines():
        if "Entering MASTER state" in line and t0 is None:
            t0 = log_time(line)
        if "tables configured on all switches" in line:
            t1 = log_time(line)
    return t1 - t0 if t0 and t1 else None


def opensm_run(engine, net, work, sock, sargs, osm_args=()):
    """OpenSM with one engine (and `osm_args`); returns (dump path, topology path, info
    dict) or None."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    log = os.path.join(work, "osm.log")
    with b.Ibsim(net, work, sock, extra_args=sargs):
        env = dict(os.environ, IBSIM_SOCKNAME=sock, LD_PRELOAD=b.UMAD2SIM, OSM_TMP_DIR=work,
                   OSM_CACHE_DIR=work)
        p = subprocess.run(["opensm", "-o", "-R", engine, "-f", log, "-d", "2"] + list(osm_args), cwd=work, env=env,
                           capture_output=True, text=True, timeout=3600)
        text = open(log, errors="replace").read() if os.path.exists(log) else ""
        if "SUBNET UP" not in text:
            return None, None, {"status": "no SUBNET UP (rc %d)" % p.returncode}
        info = {"used": engine, "vls": 1}
        m = re.search(r"(\w[\w-]*) tables configured on all switches", text)
        if m:
            info["used"] = m.group(1)
        secs = routing_seconds(text)
        info["compute_ms"] = secs * 1000 if secs is not None else float("nan")
        m = re.search(r"Virtual Lanes needed: (\d+)", text)
        if m:
            info["vls"], info["vls_logged"] = int(m.group(1)), True
        m = re.search(r"lash_core: Lanes needed: (\d+)", text)
        if m:
            info["vls"], info["vls_logged"] = int(m.group(1)), True
        m = re.search(r"ERR \w+: ([^\n]*)", text)
        if info["used"] != engine and m:
            info["why"] = m.group(1).strip()
        disc = b.run(["ibnetdiscover"], work, sock, timeout=1800).stdout
        topo = os.path.join(work, "ibnetdiscover.txt")
        open(topo, "w").write(disc)
        nodes = b.parse_ibnetdiscover(disc)
        fts = b.run(["dump_fts"], work, sock, timeout=1800).stdout
        lfts = b.parse_dump_fts(fts)
        b.fix_top_block(lfts, work, sock)
        dump = os.path.join(work, "lfts.txt")
        with open(dump, "w") as fh:
            fh.write(fts)
            fh.write(b.top_block_sections(nodes, lfts))
        return dump, topo, info


def weft_route(weft, topo, args):
    p = subprocess.run([weft, "route", "--topology", topo, "--json"] + args, capture_output=True,
                       text=True, timeout=7200)
    try:
        return json.loads(p.stdout)
    except ValueError:
        raise RuntimeError("weft route failed (rc %d): %s" % (p.returncode, p.stderr[-2000:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--fabrics", help="comma-separated names (default: all)")
    ap.add_argument("--engines", default=",".join(WEFT_ENGINES))
    ap.add_argument("--opensm-engines", default=",".join(OPENSM_ENGINES))
    ap.add_argument("--scratch", default="/tmp/weft-bench-routing")
    a = ap.parse_args()
    if not shutil.which("opensm"):
        sys.exit("opensm is not installed (scripts/install-deps.sh --bench)")
    fabrics = FABRICS
    if a.fabrics:
        want = a.fabrics.split(",")
        fabrics = [f for f in FABRICS if f[0] in want]
    rows = []
    for name, spec, *fail in fabrics:
        work = os.path.join(a.scratch, name)
        os.makedirs(work, exist_ok=True)
        net = os.path.join(work, name + ".net")
        b.run([a.weft, "topo", spec, "-o", net], work, "", preload=False)
        if fail:
            cut = b.degrade_net(net, fail[0])
            print("%s: links taken out: %s" % (name, ", ".join(
                "%s:%d-%s:%d" % (x[0], x[1], y[0], y[1]) for x, y in cut)), file=sys.stderr)
        sargs, _, _ = bb.ibsim_args(net)
        topo = None
        dumps = []
        for e in a.opensm_engines.split(","):
            sock = "weft-bench-rt-%s-%s-%d" % (name, e, os.getpid())
            dump, t, info = opensm_run(e, net, os.path.join(work, "opensm-" + e), sock, sargs)
            print("%s: opensm %s: %s" % (name, e, info), file=sys.stderr)
            if dump:
                topo = topo or t
                dumps.append((e, dump, info))
            else:
                rows.append((name, "opensm " + e, {"status": info["status"]}))
        if topo is None:
            continue
        # weft's engines on the same fabric and LIDs (OpenSM's, from ibnetdiscover); on a
        # torus also dor, from a torus description (generator GUIDs: sw0-0-0 is switch 0).
        extra, engines = [], a.engines
        m = re.match(r"torus:dims=(\d+)x(\d+)x(\d+)", spec)
        if m:
            x, y, _ = (int(v) for v in m.groups())
            conf = os.path.join(work, "torus.conf")
            base = 0x0002c90300001000
            with open(conf, "w") as fh:
                fh.write("torus %s %s %s\n" % m.groups())
                for key, step in (("xp_link", 1), ("yp_link", x), ("zp_link", x * y)):
                    fh.write("%s 0x%016x 0x%016x\n" % (key, base, base + step))
            extra, engines = ["--torus", conf], engines + ",dor"
        for j in weft_route(a.weft, topo, ["--engine", engines] + extra):
            rows.append((name, "weft " + j["engine"], j))
        for e, dump, info in dumps:
            j = weft_route(a.weft, topo, ["--lfts", "%s=%s" % (e, dump)])[0]
            j["compute_ms"] = info.get("compute_ms", float("nan"))
            j["vls"] = info["vls"]
            if info["vls"] > 1:
                j["cdg_acyclic"] = None  # its SLs are not in the dump
            label = "opensm " + e
            if info["used"] != e:
                label += " -> " + info["used"]
                j["reason"] = info.get("why", "")
            rows.append((name, label, j))

    # The busiest link against weft's minhop on the same fabric and LIDs: the up/down
    # engines have every shortest path of a tree to choose from, as minhop has.
    minhop_load = {name: j["max_link_load"] for name, label, j in rows
                   if label == "weft minhop" and j.get("status") == "ok"}
    print("| fabric | engine | status | eBB | max link load | / minhop | shift max | stretch max | VLs | CDG | compute ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, label, j in rows:
        st = j.get("status", "?")
        if st not in ("ok", "incomplete"):
            print("| %s | %s | %s | | | | | | | | |" % (name, label, (st + ": " + j.get("reason", ""))[:90]))
            continue
        cdg = j.get("cdg_acyclic")
        ratio = ("%.2f" % (j["max_link_load"] / minhop_load[name])) if minhop_load.get(name) else ""
        print("| %s | %s | %s | %.4f | %d | %s | %d | %.2f | %d | %s | %.1f |" % (
            name, label, st if st == "ok" else "incomplete: " + j.get("reason", "")[:60], j["ebb"],
            j["max_link_load"], ratio, j["shift_max_congestion"], j["stretch_max"], j["vls"],
            "n/a" if cdg is None else ("acyclic" if cdg else "CYCLE"), j["compute_ms"]))
        if label.startswith("opensm") and "->" in label and j.get("reason"):
            print("|  | (%s) | | | | | | | | | |" % j["reason"][:100])


if __name__ == "__main__":
    main()
