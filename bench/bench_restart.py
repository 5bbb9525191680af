#!/usr/bin/env python3
"""A restart or failover nobody notices (issue 29): what an SM keeps of the fabric's
multicast state when it is killed (kill -9) and started again on its own state, and when
a standby takes over from it, weft beside OpenSM 3.3.23, each alone on a fresh ibsim
fabric (6 switches, 12 CAs).

Each run: the SM at h0-0 brings the subnet up; hosts h1-0 and h2-1 join group X
(weft_sa_client, a full-member MCMemberRecord Set, as a host stack's join); the MFTs
are read (ibroute -M on every switch) once they forward X's MLID. Then kill -9 of that
SM, and either
- restart: the same SM started again (weft: its state directory; OpenSM: its cache
  directory), or
- takeover: a standby of the same kind at h3-2 (lower priority, started before the
  joins) becomes master: two weft sharing their state through a local etcd (Debian's
  etcd-server, loopback ports, stopped by PID), the way weft's standby knows what the
  master knew; two OpenSM, as OpenSM's standby runs (it has no shared state);
and after the new master's SUBNET UP and two more sweeps:
- does its SA still know X (saquery MCMR --gid, for h1-0), at which MLID;
- do the switches still forward X's MLID to the same ports (ibroute -M);
- a new group Y joined by h3-0: which MLID it gets, and whether that MLID is X's while
  the switches still forward X there (Y's traffic would then reach X's members).
ibsim's hosts have no host stack: a ClientReregister makes nobody join again, so what
the SM does not keep stays lost here. Everything started is stopped by PID."""
import argparse
import ipaddress
import os
import re
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import ibsim_bringup as b  # noqa: E402
import ibsim_standby as sb  # noqa: E402
from ibsim_etcd import Etcd, PREFIX  # noqa: E402
from ibsim_tables import mfts  # noqa: E402

SPEC = "ft2:leaves=4,spines=2,hosts=3"
X = "ff12:601b:ffff::1:1"
Y = "ff12:601b:ffff::1:2"


def join(client, work, sock, host, mgid):
    r = b.run([client, "create", mgid, "full"], work, sock, timeout=30, check=False, env={"SIM_HOST": host})
    m = re.search(r"status 0x0000 mlid (0x[0-9a-f]+)", r.stdout)
    if r.returncode != 0 or not m:
        raise b.Failure("join %s from %s: rc %d %s %s" % (mgid, host, r.returncode, r.stdout, r.stderr[-300:]))
    return int(m.group(1), 16)


def forwarding(tables, mlid):
    """{switch: ports} of the switches that forward `mlid`."""
    return {sw: t[mlid] for sw, t in tables.items() if t.get(mlid)}


def sa_mlid(work, sock, gid):
    """The MLID the SA answers for the member with port GID `gid`, or None."""
    mr = b.sa_query(["MCMR", "--gid", gid], work, sock, "h1-1")
    if mr.returncode != 0:
        raise b.Failure("saquery MCMR --gid %s: rc %d %s" % (gid, mr.returncode, mr.stderr[-300:]))
    m = re.search(r"MGID\.+%s\s.*?mlid\.+(0x[0-9a-f]+)" % re.escape(X), mr.stdout, re.S | re.I)
    return int(m.group(1), 16) if mr.returncode == 0 and m else None


def wait_standby(sm):
    """Until `sm` stands by (weft: its REST state; OpenSM: its log)."""
    deadline = time.time() + 60
    while time.time() < deadline:
        if sm.proc.poll() is not None:
            raise b.Failure("%s exited %s:\n%s" % (sm.name, sm.proc.returncode, sm.text()[-2000:]))
        if sm.kind == "weft":
            try:
                if sm.api()["state"] == "STANDBY":
                    return
            except OSError:  # REST not listening yet
                pass
        if sm.kind == "opensm" and "Entering STANDBY state" in sm.text():
            return
        time.sleep(0.2)
    raise b.Failure("%s not STANDBY in 60 s:\n%s" % (sm.name, sm.text()[-2000:]))


def one(a, net, kind, mode):
    work = os.path.join(a.scratch, kind + "-" + mode)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    sock = "weft-bench-restart-%d-%s-%s" % (os.getpid(), kind, mode)
    etcd = Etcd(work) if mode == "takeover" and kind == "weft" else None
    sms = []

    def stop_all():
        """Every SM started, then etcd, each stopped whatever the others do."""
        for s_ in sms + ([etcd] if etcd else []):
            try:
                s_.stop()
            except Exception as e:  # noqa: BLE001 (the rest are stopped all the same)
                print("stopping %s: %s" % (getattr(s_, "name", "etcd"), e), file=sys.stderr)

    def sm_at(name, host, prio):
        sm = sb.Sm(kind, name, host, prio, work, sock, a.weft, a.users)
        if etcd:
            conf = os.path.join(work, "weft.conf")
            with open(conf, "w") as f:
                f.write("state_store etcd://%s%s\nstate_store_lease_s 3\n" % (etcd.endpoint(), PREFIX))
            sm.cmd[2:2] = ["--config", conf]
        sms.append(sm)
        return sm.start()

    try:
        if etcd:
            etcd.start()
        with b.Ibsim(net, work, sock):
            try:
                return measure(a, work, sock, kind, mode, sm_at)
            finally:
                stop_all()  # before ibsim goes
    finally:
        stop_all()  # etcd (and anything left) when ibsim or etcd would not start


def measure(a, work, sock, kind, mode, sm_at):
    """One run on a started fabric: the SMs started by `sm_at` are stopped by the caller."""
    sm = sm_at("sm", "h0-0", 2)
    sm.wait(r"SUBNET UP", 1, 120)
    standby = None
    if mode == "takeover":
        standby = sm_at("standby", "h3-2", 1)
        wait_standby(standby)
    # The switches' LIDs, as the SM gave them (the same after the restart or
    # takeover: each keeps them).
    nodes = b.parse_ibnetdiscover(b.run(["ibnetdiscover"], work, sock).stdout)
    switches = {g: n for g, n in nodes.items() if n["type"] == "Switch"}
    by_name = {n.get("name"): g for g, n in nodes.items()}
    mlid = join(a.sa_client, work, sock, "h1-0", X)
    join(a.sa_client, work, sock, "h2-1", X)
    deadline = time.time() + 30
    before = forwarding(mfts(work, sock, switches), mlid)
    while len(before) < 3 and time.time() < deadline:  # leaf1, leaf2, a spine
        time.sleep(0.2)
        before = forwarding(mfts(work, sock, switches), mlid)
    if len(before) < 3:
        raise b.Failure("%s: %d switches forward 0x%04x 30 s after the joins" % (kind, len(before), mlid))
    if standby and kind == "weft":  # its copy (through etcd) holds the last join before the kill
        h21 = "%016x" % nodes[by_name["h2-1"]]["port_guids"].get(1, by_name["h2-1"])
        copy = os.path.join(standby.dir, "state", "mcast-groups")
        deadline = time.time() + 30
        while time.time() < deadline and not (os.path.exists(copy) and h21 in open(copy).read()):
            time.sleep(0.2)
        if not (os.path.exists(copy) and h21 in open(copy).read()):
            raise b.Failure("the standby's copy of mcast-groups lacks h2-1 30 s after the join")
    sm.proc.kill()
    sm.proc.wait(timeout=10)
    if standby:
        master = standby
        master.wait(r"SUBNET UP", len(re.findall(r"SUBNET UP", standby.text())) + 1, 120)
    else:
        ups = len(re.findall(r"SUBNET UP", sm.text()))
        master = sm_at("sm", "h0-0", 2)
        master.wait(r"SUBNET UP", ups + 1, 120)
    time.sleep(3)  # two more sweeps (weft: 1 s; OpenSM: -s 1)
    after = forwarding(mfts(work, sock, switches), mlid)
    h10 = by_name["h1-0"]
    gid = str(ipaddress.IPv6Address((0xfe80 << 112) | nodes[h10]["port_guids"].get(1, h10)))
    kept = sa_mlid(work, sock, gid)
    y = join(a.sa_client, work, sock, "h3-0", Y)
    time.sleep(2)
    still = forwarding(mfts(work, sock, switches), mlid)
    return {"mlid": mlid, "before": before, "after": after, "sa": kept, "y": y,
            "clash": y == mlid and bool(still)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--sa-client", required=True)
    ap.add_argument("--scratch", default="/tmp/weft-bench-restart")
    a = ap.parse_args()
    shutil.rmtree(a.scratch, ignore_errors=True)
    os.makedirs(a.scratch)
    a.users = sb.write_users(os.path.join(a.scratch, "users"))
    net = os.path.join(a.scratch, "ft2.net")
    b.run([a.weft, "topo", SPEC, "-o", net], a.scratch, "", preload=False)
    res = {(k, m): one(a, net, k, m) for m in ("restart", "takeover") for k in ("opensm", "weft")}
    print()
    print("kill -9 of the master, then a restart on its own state or a standby's takeover, 6 switches / "
          "12 CAs; group X joined by h1-0 and h2-1, group Y joined by h3-0 after")
    print()
    print("| after | SM | X's MLID | SA knows X after | switches forwarding X before / after | Y's MLID "
          "| Y on X's MLID while switches forward X |")
    print("|---|---|---|---|---|---|---|")
    for m in ("restart", "takeover"):
        for k in ("weft", "opensm"):
            r = res[(k, m)]
            sa = "0x%04x" % r["sa"] if r["sa"] is not None else "no"
            same = "same ports" if r["after"] == r["before"] else "changed"
            print("| %s | %s | 0x%04x | %s | %d / %d (%s) | 0x%04x | %s |" % (
                m, k, r["mlid"], sa, len(r["before"]), len(r["after"]), same, r["y"], "yes" if r["clash"] else "no"))


if __name__ == "__main__":
    b.run_main(main)
