#!/usr/bin/env python3
"""weft's PerfMgr on ibsim, checked with perfquery.

weft sm runs with OpenSM's `perfmgr TRUE` and `perfmgr_sweep_time_s 1` and its REST
API. Then:
- every linked port is read each counter sweep (/api/v1/health);
- ibsim's `Error "leaf0"[1] 30` drops 30 % of the packets arriving at that port and
  counts each drop in its PortRcvErrors (ibsim's pc_updated): weft's MADs are among
  them, and weft keeps polling through the drops (counter sweeps go on, retries show
  in their MAD counts), its PortRcvErrors count rises, and the port is marked unhealthy
  (PortRcvErrors past infiniband-diags' threshold of 10) with a port_unhealthy event;
- with the drops stopped, perfquery reads the same error counters weft serves for that
  port, a switch port elsewhere and a CA port (data counters: perfquery's, read later,
  are at least weft's, since MADs keep passing);
- POST /api/v1/ports/{guid}/{num}/healthy clears the mark, on disk;
- the per-port series on /metrics pass promtool.
Everything started is stopped by PID, also on failure."""
import argparse
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ibsim_bringup as b  # noqa: E402
from ibsim_rest import Client, Daemon, admin_password, check, expect, fabric_scratch, free_port  # noqa: E402

TOPO = "ft2:leaves=4,spines=2,hosts=2"
ERRORS = ("SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors",
          "PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors", "PortXmitDiscards",
          "PortXmitConstraintErrors", "PortRcvConstraintErrors", "LocalLinkIntegrityErrors",
          "ExcessiveBufferOverrunErrors", "VL15Dropped")
DATA = ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts")


def perfquery(work, sock, guid, port, ext=False):
    """perfquery's counters of one port, by GUID (resolved through weft's SA)."""
    cmd = ["perfquery"] + (["-x"] if ext else []) + ["-G", "0x%016x" % guid, str(port)]
    out = b.run(cmd, work, sock).stdout
    vals = {}
    for line in out.splitlines():
        m = re.match(r"(\w+):\.+(\d+)$", line.strip())
        if m:
            vals[m.group(1)] = int(m.group(2))
    check("PortXmitData" in vals, "perfquery %s: %s" % (" ".join(cmd[1:]), out[-500:]))
    return vals


def health(cl, auth):
    st, text, _ = cl.call("GET", "/api/v1/health?top=5", **auth)
    expect(st, 200, text, "health")
    return json.loads(text)


def wait_sweeps(cl, auth, n, timeout=30):
    """Until `n` more counter sweeps have finished; the health then."""
    start = health(cl, auth)["counter_sweeps"]
    deadline = time.time() + timeout
    while time.time() < deadline:
        h = health(cl, auth)
        if h["counter_sweeps"] >= start + n:
            return h
        time.sleep(0.1)
    raise b.Failure("fewer than %d counter sweeps in %d s (at %d)" % (n, timeout, start))


def counters(cl, auth, guid, port):
    st, text, _ = cl.call("GET", "/api/v1/ports/0x%016x/%d/counters" % (guid, port), **auth)
    expect(st, 200, text, "counters of 0x%016x/%d" % (guid, port))
    return json.loads(text)


def compare(work, sock, cl, auth, guid, port, what):
    """perfquery against weft's last read of the same port."""
    w = counters(cl, auth, guid, port)
    pq = perfquery(work, sock, guid, port)
    for name in ERRORS:
        check(pq[name] == w["counters"][name]["value"],
              "%s %s: perfquery %d, weft %d" % (what, name, pq[name], w["counters"][name]["value"]))
    for name in DATA:
        check(pq[name] >= w["counters"][name]["value"],
              "%s %s: perfquery %d below weft's earlier %d" % (what, name, pq[name], w["counters"][name]["value"]))
    if w["extended"] is not None:
        px = perfquery(work, sock, guid, port, ext=True)
        for name in DATA:
            check(px[name] >= w["extended"][name]["value"] > 0,
                  "%s extended %s: perfquery %d, weft %d" % (what, name, px[name], w["extended"][name]["value"]))
    return w, pq


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--scratch", required=True)
    a = ap.parse_args()
    work, net, sock, state, log = fabric_scratch(a.weft, a.scratch, "perf", TOPO)
    conf = os.path.join(work, "weft.conf")
    with open(conf, "w") as f:
        f.write("# OpenSM's names\nperfmgr TRUE\nperfmgr_sweep_time_s 1\nperfmgr_max_outstanding_queries 50\n")
    port = free_port()
    d = None
    with b.Ibsim(net, work, sock) as sim:
        try:
            d = Daemon(a.weft, work, sock, state, log, port, ["--config", conf]).start()
            cl = Client(port)
            admin = {"user": "admin", "password": admin_password(state)}
            h = wait_sweeps(cl, admin, 2)
            # 6 switches: 4 leaves with 2 hosts and 2 uplinks, 2 spines with 4 downlinks; 8 CAs.
            check(h["perfmgr"] and h["last_sweep"]["ports"] == 4 * 4 + 2 * 4 + 8 and h["last_sweep"]["unread"] == 0,
                  "a counter sweep reads all 32 linked ports: %s" % h["last_sweep"])
            check(h["unhealthy"] == [], "no port is unhealthy yet: %s" % h["unhealthy"])
            st, text, _ = cl.call("GET", "/ufmRest/resources/systems", **admin)
            expect(st, 200, text, "systems")
            leaf0 = spine1 = None
            for s in json.loads(text):
                if s.get("system_name") == "leaf0":
                    leaf0 = int(s["guid"], 16)
                if s.get("system_name") == "spine1":
                    spine1 = int(s["guid"], 16)
            check(leaf0 and spine1, "leaf0 and spine1 among the systems: %s" % text[:300])
            before = counters(cl, admin, leaf0, 1)["counters"]["PortRcvErrors"]["total"]

            # MAD drops at leaf0 port 1: the port weft's MADs enter the fabric by.
            os.write(sim.fifo_fd, b'Error "leaf0"[1] 30\n')
            t0 = time.time()
            deadline = t0 + 40
            marked = None
            while time.time() < deadline and not marked:
                h = health(cl, admin)
                marked = [u for u in h["unhealthy"] if u["guid"] == "0x%016x" % leaf0 and u["port"] == 1]
                time.sleep(0.2)
            check(marked, "leaf0/1 not unhealthy within 40 s of the drops: %s" % h)
            check(marked[0]["counter"] == "PortRcvErrors" and marked[0]["policy"] == "report",
                  "leaf0/1 marked for %s" % marked[0])
            print("Error \"leaf0\"[1] 30: leaf0/1 unhealthy after %.1f s: %s" % (time.time() - t0, marked[0]["reason"]))
            s0 = h["counter_sweeps"]
            mads = []
            for _ in range(3):
                mads.append(wait_sweeps(cl, admin, 1)["last_sweep"])
            check(health(cl, admin)["counter_sweeps"] >= s0 + 3, "polling stopped under drops")
            check(any(m["mads"] > 2 * 32 for m in mads),
                  "no retries among the counter sweeps' MADs under 30 %% drops: %s" % mads)
            print("under drops, counter sweeps go on: %s" % [(m["mads"], m["unread"]) for m in mads])
            st, text, _ = cl.call("GET", "/api/v1/events?since=0", **admin)
            expect(st, 200, text, "events")
            ev = [e for e in json.loads(text)["events"] if e["type"] == "port_unhealthy"]
            check(any("0x%016x" % leaf0 in json.dumps(e) for e in ev), "no port_unhealthy event for leaf0: %s" % ev)

            os.write(sim.fifo_fd, b'Error "leaf0"[1] 0\n')
            time.sleep(0.5)
            wait_sweeps(cl, admin, 2)
            w, pq = compare(work, sock, cl, admin, leaf0, 1, "leaf0/1")
            check(pq["PortRcvErrors"] > 0 and w["counters"]["PortRcvErrors"]["total"] > before,
                  "the drops were counted: perfquery %d, weft's total %d" %
                  (pq["PortRcvErrors"], w["counters"]["PortRcvErrors"]["total"]))
            print("leaf0/1: perfquery and weft agree, PortRcvErrors %d" % pq["PortRcvErrors"])
            compare(work, sock, cl, admin, spine1, 2, "spine1/2")
            st, text, _ = cl.call("GET", "/ufmRest/resources/ports", **admin)
            ca = [p for p in json.loads(text) if p["system_name"] == "h2-1"]
            check(ca, "h2-1's port in ports")
            compare(work, sock, cl, admin, int(ca[0]["guid"], 16), 1, "h2-1/1")
            print("spine1/2 and h2-1/1: perfquery and weft agree")

            marks = os.path.join(state, "unhealthy-ports")
            check("0x%016x" % leaf0 in open(marks).read(), "the mark is on disk: " + open(marks).read())
            st, text, _ = cl.call("POST", "/api/v1/ports/0x%016x/1/healthy" % leaf0, **admin)
            expect(st, 200, text, "healthy")
            check("0x%016x" % leaf0 not in open(marks).read(), "the mark left the disk: " + open(marks).read())
            check(not [u for u in health(cl, admin)["unhealthy"] if u["guid"] == "0x%016x" % leaf0],
                  "leaf0 still unhealthy")

            st, text, _ = cl.call("GET", "/metrics", **admin)
            expect(st, 200, text, "metrics")
            p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
            check(p.returncode == 0, "promtool check metrics: %s %s" % (p.stdout, p.stderr))
            want = 'weft_port_errors_total{node_guid="0x%016x",port_guid="0x%016x",port="1",counter="PortRcvErrors"}' % (
                leaf0, leaf0)
            check(want in text, "no %s in /metrics" % want)
            print("/metrics: per-port series pass promtool")
            print("PASS")
        except b.Failure as e:
            print("FAIL:", e)
            if d:
                print(d.log_text()[-3000:])
            sys.exit(1)
        finally:
            if d:
                d.stop()


if __name__ == "__main__":
    main()
