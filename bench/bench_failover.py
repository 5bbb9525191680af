#!/usr/bin/env python3
"""Failover: the master SM is killed (kill -9) and the standby brings the subnet up
again. weft beside weft against OpenSM 3.3.23 beside OpenSM, on ibsim's 444-switch
fat tree (3,456 CAs), with the same polling options for both (sminfo_polling_timeout
2000 ms, polling_retry_number 2: a standby may wait 3 polls, 6 s, before it takes
over; OpenSM's defaults, 10000 ms and 4, would make that 50 s).

Each run: a fresh ibsim; the master at the first host (priority 5) brings the subnet up; the
standby at the last host (priority 1) stands by; 2 s later the master is killed.
Failover is the wall time from the kill to the standby's SUBNET UP in its log (both
logs polled every 20 ms). The kinds take turns, run by run. Then `sminfo` must name
the standby as master."""
import argparse
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

SPEC = "ft3:pods=8,leaves=24,aggs=18,hosts=18,cores=6,links=2"  # 444 switches, 3,456 CAs
POLL_MS, RETRIES = 2000, 2


def hosts(net):
    return re.findall(r'^Ca\s+\d+\s+"([^"]+)"', open(net).read(), re.M)


def last_host(net):
    return hosts(net)[-1]


def kill_and_take_over(master, standby, kind):
    """kill -9 of the master: the seconds to the standby's next SUBNET UP in its log
    (polled every 20 ms), at most 600."""
    ups = len(re.findall(r"SUBNET UP", standby.text()))
    t0 = time.time()
    master.kill9()
    while time.time() < t0 + 600 and len(re.findall(r"SUBNET UP", standby.text())) <= ups:
        if standby.proc.poll() is not None:
            raise b.Failure("the %s standby exited" % kind)
        time.sleep(0.02)
    took = time.time() - t0
    if took >= 600:
        raise b.Failure("the %s standby did not take over in 600 s" % kind)
    return took


def one_run(a, net, sargs, kind, k):
    work = os.path.join(a.scratch, "%s-%d" % (kind, k))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    sock = "weft-bench-failover-%d-%s-%d" % (os.getpid(), kind, k)
    sb.POLL_MS, sb.RETRIES = POLL_MS, RETRIES
    with b.Ibsim(net, work, sock, extra_args=sargs):
        time.sleep(1)
        master = sb.Sm(kind, "master", hosts(net)[0], 5, work, sock, a.weft, a.users)
        standby = sb.Sm(kind, "standby", last_host(net), 1, work, sock, a.weft, a.users)
        try:
            master.start()
            master.wait(r"SUBNET UP", 1, 300)
            standby.start()
            standby.wait(r"STANDBY" if kind == "weft" else r"Entering STANDBY state", 1, 300)
            time.sleep(2)
            took = kill_and_take_over(master, standby, kind)
            info = b.run(["sminfo"], work, sock, env={"SIM_HOST": hosts(net)[1]}).stdout
            g = sb.port_guid_of(work, sock, last_host(net))
            m = re.search(r"sm guid 0x([0-9a-f]+).*SMINFO_MASTER", info)
            if not m or int(m.group(1), 16) != g:
                raise b.Failure("after the %s failover sminfo says: %s" % (kind, info))
            return took
        finally:
            standby.stop()
            master.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--scratch", default="/tmp/weft-bench-failover")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    shutil.rmtree(a.scratch, ignore_errors=True)
    os.makedirs(a.scratch)
    a.users = sb.write_users(os.path.join(a.scratch, "users"))
    net = os.path.join(a.scratch, "ft3.net")
    b.run([a.weft, "topo", SPEC, "-o", net], a.scratch, "", preload=False)
    sargs = ibsim_args(net)[0]
    res = {"weft": [], "opensm": []}
    for k in range(a.runs):
        for kind in ("opensm", "weft"):
            t = one_run(a, net, sargs, kind, k)
            res[kind].append(t)
            print("run %d %-6s failover %.2f s" % (k + 1, kind, t), flush=True)
    bound = POLL_MS / 1000.0 * (RETRIES + 1)
    print()
    print("Failover on the 444-switch tree (3,456 CAs), kill -9 of the master to the standby's "
          "SUBNET UP; sminfo_polling_timeout %d ms, polling_retry_number %d (%.0f s of polls), %d runs"
          % (POLL_MS, RETRIES, bound, a.runs))
    print()
    print("| SMs | failover s, median | min - max | weft/OpenSM |")
    print("|---|---|---|---|")
    mw, mo = statistics.median(res["weft"]), statistics.median(res["opensm"])
    print("| weft beside weft | %.2f | %.2f - %.2f | %.2f |" % (mw, min(res["weft"]), max(res["weft"]), mw / mo))
    print("| OpenSM beside OpenSM | %.2f | %.2f - %.2f | |" % (mo, min(res["opensm"]), max(res["opensm"])))


if __name__ == "__main__":
    b.run_main(main)
