#!/usr/bin/env python3
"""The state store: weft beside weft with the state directory (state_store dir) and with
a local etcd (state_store etcd://..., Debian's etcd-server on loopback, lease 10 s),
and OpenSM beside OpenSM, on ibsim's 444-switch fat tree (3,456 CAs); sminfo polling
as bench_failover.py (2000 ms, 2 retries).

Each run: a fresh ibsim (and a fresh etcd); the master at the first host (priority 5)
brings the subnet up, the standby at the last host (priority 1) stands by. On weft's
master, 20 REST partition changes one after another (POST /ufmRest/resources/pkeys,
each adding one more host's GUID to P_Key 0x0a12), timed from the request to its 200:
with etcd that is the fenced transaction in etcd plus the local copy, with the
directory the local copy alone. Then the master gets kill -9; failover is the time to
the standby's SUBNET UP (logs polled every 20 ms); with etcd, also the time until the
new master holds the master key (the old lease ran out) and has written back what it
wrote meanwhile. The kinds take turns, run by run."""
import argparse
import json
import os
import re
import shutil
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, HERE)
import ibsim_bringup as b  # noqa: E402
import ibsim_standby as sb  # noqa: E402
from bench_bringup import ibsim_args  # noqa: E402
from bench_failover import kill_and_take_over  # noqa: E402
from ibsim_etcd import Etcd  # noqa: E402
from ibsim_rest import Client, openssl_hash  # noqa: E402

SPEC = "ft3:pods=8,leaves=24,aggs=18,hosts=18,cores=6,links=2"  # 444 switches, 3,456 CAs
POLL_MS, RETRIES = 2000, 2
CHANGES = 20
LEASE_S = 10
ADMIN = {"user": "admin", "password": "adminpass"}


def hosts(net):
    return re.findall(r'^Ca\s+\d+\s+"([^"]+)"', open(net).read(), re.M)


def host_guids(sm):
    """The first CHANGES hosts' port GUIDs, as the master's REST API lists the ports."""
    st, text, _ = Client(sm.port).call("GET", "/ufmRest/resources/ports", **ADMIN)
    if st != 200:
        raise b.Failure("ports: HTTP %d %s" % (st, text[:200]))
    guids = sorted(int(p["guid"], 16) for p in json.loads(text) if p["system_name"].startswith("h"))
    if len(guids) < CHANGES:
        raise b.Failure("%d host ports" % len(guids))
    return guids[:CHANGES]


def partition_changes(master, guids):
    """CHANGES partition changes on the master, one at a time: each one's ms to its 200."""
    cl = Client(master.port)
    times = []
    for i in range(CHANGES):
        raw = ('{"pkey": "0x0A12", "index0": false, "ip_over_ib": true, "membership": "full", '
               '"guids": ["%016x"]}' % guids[i])
        t0 = time.time()
        st, text, _ = cl.call("POST", "/ufmRest/resources/pkeys", raw=raw, **ADMIN)
        times.append(1000 * (time.time() - t0))
        if st != 200:
            raise b.Failure("partition change %d: HTTP %d %s" % (i, st, text[:300]))
    return times


def store_of(sm):
    st, text, _ = Client(sm.port).call("GET", "/api/v1/sm", **ADMIN)
    return json.loads(text)["state_store"] if st == 200 else {}


def one_run(a, net, sargs, kind, k):
    work = os.path.join(a.scratch, "%s-%d" % (kind, k))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    sock = "weft-bench-store-%d-%s-%d" % (os.getpid(), kind, k)
    sb.POLL_MS, sb.RETRIES = POLL_MS, RETRIES
    etcd = None
    conf = os.path.join(work, "weft.conf")
    with open(conf, "w") as f:
        if kind == "weft-etcd":
            etcd = Etcd(work).start()
            f.write("state_store etcd://%s/weft/bench\nstate_store_lease_s %d\n" % (etcd.endpoint(), LEASE_S))
    sm_kind = "opensm" if kind == "opensm" else "weft"
    out = {}
    try:
        with b.Ibsim(net, work, sock, extra_args=sargs):
            time.sleep(1)
            master = sb.Sm(sm_kind, "master", hosts(net)[0], 5, work, sock, a.weft, a.users)
            standby = sb.Sm(sm_kind, "standby", hosts(net)[-1], 1, work, sock, a.weft, a.users)
            if sm_kind == "weft":
                master.cmd += ["--config", conf]
                standby.cmd += ["--config", conf]
            try:
                master.start()
                master.wait(r"SUBNET UP", 1, 300)
                standby.start()
                standby.wait(r"STANDBY" if sm_kind == "weft" else r"Entering STANDBY state", 1, 300)
                if kind == "weft-etcd":
                    deadline = time.time() + 30
                    while not store_of(master).get("holds_master_key") and time.time() < deadline:
                        time.sleep(0.1)
                if sm_kind == "weft":
                    out["changes"] = partition_changes(master, host_guids(master))
                time.sleep(2)
                t0 = time.time()
                out["failover"] = kill_and_take_over(master, standby, kind)
                if kind == "weft-etcd":
                    while time.time() < t0 + 60:
                        s = store_of(standby)
                        if s.get("holds_master_key") and not s.get("degraded"):
                            break
                        time.sleep(0.05)
                    else:
                        raise b.Failure("the new master does not hold the key 60 s after the kill")
                    out["key"] = time.time() - t0
            finally:
                standby.stop()
                master.stop()
    finally:
        if etcd:
            etcd.stop()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--scratch", default="/tmp/weft-bench-store")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    shutil.rmtree(a.scratch, ignore_errors=True)
    os.makedirs(a.scratch)
    a.users = os.path.join(a.scratch, "users")
    with open(a.users, "w") as f:
        f.write("admin:%s:admin\nmon:%s:monitor\n" % (openssl_hash("adminpass", a.scratch),
                                                     openssl_hash("monpass", a.scratch)))
    os.chmod(a.users, 0o600)
    net = os.path.join(a.scratch, "ft3.net")
    b.run([a.weft, "topo", SPEC, "-o", net], a.scratch, "", preload=False)
    sargs = ibsim_args(net)[0]
    kinds = ("opensm", "weft-dir", "weft-etcd")
    res = {k: [] for k in kinds}
    for k in range(a.runs):
        for kind in kinds:
            r = one_run(a, net, sargs, kind, k)
            res[kind].append(r)
            extra = ""
            if "changes" in r:
                extra = ", partition change median %.1f ms" % statistics.median(r["changes"])
            if "key" in r:
                extra += ", key held %.2f s after the kill" % r["key"]
            print("run %d %-9s failover %.2f s%s" % (k + 1, kind, r["failover"], extra), flush=True)
    med = lambda xs: statistics.median(xs)  # noqa: E731
    fo = {k: [r["failover"] for r in res[k]] for k in kinds}
    print()
    print("State store on the 444-switch tree (3,456 CAs): kill -9 of the master to the standby's "
          "SUBNET UP (sminfo_polling_timeout %d ms, polling_retry_number %d), %d runs; etcd lease %d s"
          % (POLL_MS, RETRIES, a.runs, LEASE_S))
    print()
    print("| SMs | failover s, median | min - max | / OpenSM | new master holds the etcd key, s |")
    print("|---|---|---|---|---|")
    names = {"opensm": "OpenSM beside OpenSM", "weft-dir": "weft, state_store dir",
             "weft-etcd": "weft, state_store etcd"}
    for k in kinds:
        key = ("%.2f" % med([r["key"] for r in res[k]])) if k == "weft-etcd" else ""
        ratio = "" if k == "opensm" else "%.2f" % (med(fo[k]) / med(fo["opensm"]))
        print("| %s | %.2f | %.2f - %.2f | %s | %s |" % (names[k], med(fo[k]), min(fo[k]), max(fo[k]), ratio, key))
    print()
    print("| REST partition change (POST /ufmRest/resources/pkeys, to its 200), %d x %d | median ms | p90 ms | max ms |"
          % (a.runs, CHANGES))
    print("|---|---|---|---|")
    for k in ("weft-dir", "weft-etcd"):
        xs = sorted(x for r in res[k] for x in r["changes"])
        print("| %s | %.1f | %.1f | %.1f |" % (names[k], med(xs), xs[int(0.9 * (len(xs) - 1))], xs[-1]))
    d, e = [sorted(x for r in res[k] for x in r["changes"]) for k in ("weft-dir", "weft-etcd")]
    print()
    print("etcd / directory, partition change median: %.2f; failover: %.2f" %
          (med(e) / med(d), med(fo["weft-etcd"]) / med(fo["weft-dir"])))
    print("OpenSM has no REST partition change (its partitions.conf is reloaded on SIGHUP, "
          "acknowledged by nothing): no column beside these.")


if __name__ == "__main__":
    b.run_main(main)
