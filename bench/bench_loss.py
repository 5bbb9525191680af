#!/usr/bin/env python3
"""Loss benchmark: weft and OpenSM bringing up the same ibsim fabric while every node
drops a share of the MADs through it (ibsim's `Error "node" RATE` on every node), in one
run, each SM with its default options.

For each fabric, each loss rate and each SM, on a fresh ibsim:
  - seconds from the SM's start until its log first says SUBNET UP (or "never" within
    --deadline), and the sweeps that ended with failures before it (weft's SM-0101);
  - what the tables it left are worth: the SM is stopped at SUBNET UP, the loss is
    lifted, and ibnetdiscover and dump_fts read back every switch's LFT. A CA pair
    (source port, destination port) counts as reachable when the source's switch
    forwards the destination's LID, hop by hop, to that port. A CA left without a LID
    reaches nobody.
Not like for like: OpenSM leaves its retries to the kernel (umad_send's retries), which
umad2sim ignores, so on ibsim OpenSM sends each MAD once, where weft's engine resends.
Usage: bench_loss.py --weft BUILD/app/weft [--fabrics a,b] [--rates 1,5,10] [--deadline S]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import ibsim_bringup as b  # noqa: E402

FABRICS = [
    ("ft2-36sw", "ft2:leaves=18,spines=18,hosts=18"),                      # 36 switches, 324 CAs
    ("ft3-222sw", "ft3:pods=4,leaves=24,aggs=18,hosts=18,cores=3,links=4"),  # 222 switches, 1728 CAs
]


def node_names(net):
    return re.findall(r'^(?:Switch|Ca|Hca)\s+\d+\s+"([^"]+)"', open(net).read(), re.M)


def ca_pairs(nodes, lfts):
    """(reachable, all): ordered pairs of CA ports, source != destination."""
    ca_ports = []  # (guid, port, lid, switch guid)
    for guid, n in nodes.items():
        if n["type"] == "Switch":
            continue
        for port, (peer, _, lid) in n["ports"].items():
            ca_ports.append((guid, port, lid, peer))
    owner = {lid: (g, p) for g, p, lid, _ in ca_ports if lid}
    reach = {}  # (switch, lid) -> delivered to the LID's owner

    def delivers(sw, lid):
        key = (sw, lid)
        if key in reach:
            return reach[key]
        cur, ok = sw, False
        for _ in range(64):
            out = lfts.get(cur, (None, {}))[1].get(lid)
            if not out or out not in nodes[cur]["ports"]:
                break
            peer, pport, _ = nodes[cur]["ports"][out]
            if nodes.get(peer, {}).get("type") != "Switch":
                ok = (peer, pport) == owner.get(lid)
                break
            cur = peer
        reach[key] = ok
        return ok

    total = len(ca_ports) * (len(ca_ports) - 1)
    good = 0
    for g, p, lid, sw in ca_ports:
        if not lid or nodes.get(sw, {}).get("type") != "Switch":
            continue
        for dlid in owner:
            if dlid != lid and delivers(sw, dlid):
                good += 1
    return good, total


def one(kind, weft, net, rate, work, deadline, sargs):
    """(seconds to SUBNET UP or None, failed sweeps before it, reachable CA pairs, all pairs)."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    sock = "weft-bench-loss-%d-%s-%d" % (os.getpid(), kind, rate)
    log = os.path.join(work, "sm.log")
    names = node_names(net)
    with b.Ibsim(net, work, sock, extra_args=sargs) as sim:
        for n in names:
            os.write(sim.fifo_fd, ('Error "%s" %d\n' % (n, rate)).encode())
        time.sleep(0.5)
        env = dict(os.environ, IBSIM_SOCKNAME=sock, LD_PRELOAD=b.UMAD2SIM)
        if kind == "weft":
            cmd = [weft, "sm", "--rest", "off", "--state-dir", os.path.join(work, "state"), "--log-file", log]
        else:
            env.update(OSM_TMP_DIR=work, OSM_CACHE_DIR=work)
            cmd = ["opensm", "-f", log, "-d", "2"]  # -d 2: each log line flushed as written
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        took = None
        try:
            while time.monotonic() - t0 < deadline:
                text = open(log, errors="replace").read() if os.path.exists(log) else ""
                if "SUBNET UP" in text:
                    took = time.monotonic() - t0
                    break
                if proc.poll() is not None:
                    break
                time.sleep(0.05)
        finally:
            b.stop_process(proc)
        text = open(log, errors="replace").read() if os.path.exists(log) else ""
        failed = len(re.findall(r"subnet NOT up", text.split("SUBNET UP")[0]))
        for n in names:
            os.write(sim.fifo_fd, ('Error "%s" 0\n' % n).encode())
        time.sleep(0.5)
        nodes = b.parse_ibnetdiscover(b.run(["ibnetdiscover"], work, sock, timeout=1800).stdout)
        lfts = b.parse_dump_fts(b.run(["dump_fts", "-n"], work, sock, timeout=1800, check=False).stdout)
        b.fix_top_block(lfts, work, sock)
        good, total = ca_pairs(nodes, lfts)
    return took, failed, good, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--fabrics", default="", help="comma-separated names (default: all)")
    ap.add_argument("--rates", default="0,1,5,10", help="percent of MADs each node drops (0: the control)")
    ap.add_argument("--deadline", type=float, default=180, help="seconds to wait for SUBNET UP")
    ap.add_argument("--work", default="/tmp/weft-bench-loss")
    a = ap.parse_args()
    fabrics = [f for f in FABRICS if not a.fabrics or f[0] in a.fabrics.split(",")]
    rates = [int(r) for r in a.rates.split(",")]
    weft = os.path.abspath(a.weft)
    os.makedirs(a.work, exist_ok=True)
    rows = []
    for name, spec in fabrics:
        net = os.path.join(a.work, name + ".net")
        subprocess.run([weft, "topo", spec, "-o", net], check=True, capture_output=True)
        sargs = []
        for rate in rates:
            row = [name, rate]
            for kind in ("weft", "opensm"):
                took, failed, good, total = one(kind, weft, net, rate, os.path.join(a.work, name, kind), a.deadline,
                                                sargs)
                print("%-10s %3d %% %-6s up %s, %d failed sweeps, %d of %d CA pairs reachable" %
                      (name, rate, kind, "never" if took is None else "%.2f s" % took, failed, good, total),
                      file=sys.stderr, flush=True)
                row.append((took, failed, good, total))
            rows.append(row)
    print()
    print("Loss on every node of the fabric (ibsim Error), default options; tables read back at SUBNET UP "
          "with the loss lifted")
    print("| fabric | loss | weft: SUBNET UP s | failed sweeps | CA pairs reachable | OpenSM: SUBNET UP s "
          "| CA pairs reachable |")
    print("|---|---|---|---|---|---|---|")
    for name, rate, w, o in rows:
        def up(t):
            return "never in %d s" % a.deadline if t is None else "%.2f" % t

        def pct(good, total):
            if not total:
                return "-"
            share = 100.0 * good / total
            return ("%.1f %%" if share >= 1 or share == 0 else "%.3f %%") % share
        print("| %s | %d %% | %s | %d | %s | %s | %s |" % (name, rate, up(w[0]), w[1], pct(w[2], w[3]), up(o[0]),
                                                      pct(o[2], o[3])))


if __name__ == "__main__":
    b.run_main(main)
