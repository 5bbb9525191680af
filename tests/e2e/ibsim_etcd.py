#!/usr/bin/env python3
"""Two weft SMs on one ibsim fabric sharing their state through a local etcd (Debian's
etcd-server on loopback ports, a scratch data dir, stopped by PID).

Failover: the master (priority 5, at h0-0) brings the subnet up and holds the master
key; the standby (priority 1, at h3-1) watches. The master issues a REST token and
adds a partition (ib-kubernetes' AddGuidsToPKey body); etcd is then stopped under it:
the master answers a second partition change from its local copy and says so
(/api/v1/sm, the log, a state_store event); etcd returns and the master writes the
change back. The master gets `kill -9`: the standby takes over with every LID as it
was, both partitions on every member port (smpquery pkeys), the old master's token
accepted, and once the old lease expires it holds the key and writes to etcd itself.

Fencing: a master is frozen (SIGSTOP) until its lease expires and the standby has
taken over and holds the key; thawed, its partition change is refused (503
not_master) and etcd never shows it.
Everything started is stopped by PID, also on failure."""
import argparse
import contextlib
import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ibsim_bringup as b  # noqa: E402
from ibsim_rest import Client, check, expect, free_port, held_pkeys, lids, openssl_hash  # noqa: E402

TOPO = "ft2:leaves=4,spines=2,hosts=2"  # hosts h0-0 .. h3-1
LEASE_S = 3
PREFIX = "/weft/e2e"


class Etcd:
    """etcd on two free loopback ports with a data dir under `work`; by PID."""

    def __init__(self, work):
        self.dir = os.path.join(work, "etcd")
        os.makedirs(self.dir, exist_ok=True)
        self.client, self.peer = free_port(), free_port()
        self.proc = None

    def endpoint(self):
        return "127.0.0.1:%d" % self.client

    def start(self):
        c, p = "http://127.0.0.1:%d" % self.client, "http://127.0.0.1:%d" % self.peer
        self.proc = subprocess.Popen(
            ["etcd", "--name", "e2e", "--data-dir", os.path.join(self.dir, "data"), "--listen-client-urls", c,
             "--advertise-client-urls", c, "--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
             "--initial-cluster", "e2e=" + p, "--logger", "zap"],
            cwd=self.dir, stdout=open(os.path.join(self.dir, "etcd.out"), "a"), stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.ctl("endpoint", "health", check=False).returncode == 0:
                return self
            time.sleep(0.1)
        raise b.Failure("etcd did not answer in 20 s: " + open(os.path.join(self.dir, "etcd.out")).read()[-1500:])

    def ctl(self, *args, check=True):
        return subprocess.run(["etcdctl", "--endpoints", self.endpoint(), "--dial-timeout", "2s"] + list(args),
                              env=dict(os.environ, ETCDCTL_API="3"), capture_output=True, text=True, check=check,
                              timeout=30)

    def doc(self, name):
        """What etcd holds for a state document: (generation, text), or (0, "")."""
        out = self.ctl("get", "--print-value-only", PREFIX + "/state/" + name).stdout.strip()
        if not out:
            return 0, ""
        j = json.loads(out)
        return j["generation"], j["text"]

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


class Sm:
    """weft sm under umad2sim at node `host`, REST on a port of its own; by PID."""

    def __init__(self, a, work, sock, name, host, prio, conf, users):
        self.name, self.host, self.sock, self.work = name, host, sock, work
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir, exist_ok=True)
        self.log = os.path.join(self.dir, "log")
        self.port = free_port()
        self.cl = Client(self.port)
        self.cmd = [a.weft, "sm", "--config", conf, "--state-dir", os.path.join(self.dir, "state"), "--log-file",
                    self.log, "--priority", str(prio), "--rest", "127.0.0.1:%d" % self.port, "--rest-users", users]
        self.proc = None

    def start(self):
        env = dict(os.environ, IBSIM_SOCKNAME=self.sock, LD_PRELOAD=b.UMAD2SIM, ASAN_OPTIONS=b.ASAN_OPTIONS,
                   SIM_HOST=self.host)
        self.proc = subprocess.Popen(self.cmd, cwd=self.dir, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        return self

    def text(self):
        return open(self.log, errors="replace").read() if os.path.exists(self.log) else ""

    def wait(self, what, pred, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise b.Failure("%s exited %s waiting for %s:\n%s" % (self.name, self.proc.returncode, what,
                                                                     self.text()[-2500:]))
            try:
                v = pred()
            except (OSError, ValueError, KeyError):
                v = None
            if v:
                return v
            time.sleep(0.1)
        raise b.Failure("%s: not %s in %d s:\n%s" % (self.name, what, timeout, self.text()[-2500:]))

    def sm(self, auth):
        st, text, _ = self.cl.call("GET", "/api/v1/sm", **auth)
        expect(st, 200, text, self.name + " /api/v1/sm")
        return json.loads(text)

    def store(self, auth):
        return self.sm(auth)["state_store"]

    def stop(self):
        if self.proc and self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGCONT)
            except OSError:
                pass
            b.stop_process(self.proc)


def setup(a, name):
    work = os.path.join(a.scratch, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    net = os.path.join(work, "ft.net")
    b.run([a.weft, "topo", TOPO, "-o", net], work, "", preload=False)
    users = os.path.join(work, "users")
    with open(users, "w") as f:
        f.write("admin:%s:admin\n" % openssl_hash("adminpass", work))
    os.chmod(users, 0o600)
    return work, net, users, "weft-e2e-%s-%d" % (name, os.getpid())


def write_conf(work, etcd):
    conf = os.path.join(work, "weft.conf")
    with open(conf, "w") as f:
        f.write("state_store etcd://%s%s\nstate_store_lease_s %d\nsminfo_polling_timeout 1000\n"
                "polling_retry_number 2\nsweep_interval 1\n" % (etcd.endpoint(), PREFIX, LEASE_S))
    return conf


ADMIN = {"user": "admin", "password": "adminpass"}


def master_from(work, sock):
    """The port GUID of the master `sminfo` finds from h1-0, or None."""
    info = b.run(["sminfo"], work, sock, env={"SIM_HOST": "h1-0"}, check=False).stdout
    m = re.search(r"sm guid 0x([0-9a-f]+).*SMINFO_MASTER", info)
    return int(m.group(1), 16) if m else None


def add_pkey(sm, pkey, guids):
    raw = ('{"pkey": "0x%04X", "index0": false, "ip_over_ib": true, "membership": "full", "guids": [%s]}' %
           (pkey, ",".join('"%016x"' % g for g in guids)))
    return sm.cl.call("POST", "/ufmRest/resources/pkeys", raw=raw, **ADMIN)


def wait_applied(sm, gen):
    sm.wait("partition generation %d applied" % gen, lambda: sm.sm(ADMIN)["partitions"]["applied"] >= gen)


def start_pair(a, work, sock, conf, users, sms, prios):
    """The first SM (at h0-0) up as master and holding the key, the second (at h3-1)
    standing by; both appended to `sms` as they start (stopped by the caller)."""
    first = Sm(a, work, sock, "sm1", "h0-0", prios[0], conf, users).start()
    sms.append(first)
    first.wait("SUBNET UP", lambda: "SUBNET UP" in first.text())
    second = Sm(a, work, sock, "sm2", "h3-1", prios[1], conf, users).start()
    sms.append(second)
    second.wait("STANDBY", lambda: second.sm(ADMIN)["state"] == "STANDBY")
    first.wait("holding the master key", lambda: first.store(ADMIN)["holds_master_key"])
    return first, second, host_guids(first)


def host_guids(sm):
    """Host name -> port GUID, as the SM's REST API lists the ports."""
    st, text, _ = sm.cl.call("GET", "/ufmRest/resources/ports", **ADMIN)
    expect(st, 200, text, "ports")
    return {p["system_name"]: int(p["guid"], 16) for p in json.loads(text) if p["system_name"][0] == "h"}


@contextlib.contextmanager
def scenario(a, name):
    """A fresh fabric on ibsim, its etcd and the SMs' config: yields (work, sock, etcd,
    conf, users, sms); the SMs put in `sms`, ibsim and etcd stopped by PID on the way out."""
    work, net, users, sock = setup(a, name)
    etcd = Etcd(work).start()
    conf = write_conf(work, etcd)
    sms = []
    try:
        with b.Ibsim(net, work, sock):
            try:
                yield work, sock, etcd, conf, users, sms
            finally:
                for s in sms:
                    s.stop()
    finally:
        etcd.stop(signal.SIGKILL)


def failover(a):
    with scenario(a, "etcd-failover") as (work, sock, etcd, conf, users, sms):
        sm1, sm2, guids = start_pair(a, work, sock, conf, users, sms, (5, 1))
        check(etcd.ctl("get", "--print-value-only", PREFIX + "/master").stdout.startswith(
            "0x%016x" % int(sm1.sm(ADMIN)["guid"], 16)), "PREFIX/master does not name sm1")

        # A token from the master, and a partition.
        st, text, _ = sm1.cl.call("POST", "/api/v1/tokens", body={"ttl_s": 3600}, **ADMIN)
        expect(st, 201, text, "token")
        token = json.loads(text)["token"]
        bearer = {"authz": "Bearer " + token}
        st, text, _ = add_pkey(sm1, 0x0A12, [guids["h1-0"], guids["h2-0"]])
        expect(st, 200, text, "AddGuidsToPKey 0x0a12")
        wait_applied(sm1, json.loads(text)["generation"])
        gen, doc = etcd.doc("partitions.rest.conf")
        check("0x0a12" in doc.lower() and ("%016x" % guids["h2-0"]) in doc.lower(),
              "etcd's partitions.rest.conf lacks 0x0a12: %r" % doc)
        check(etcd.doc("rest-tokens")[0] >= 1 and etcd.doc("guid2lid")[0] >= 1,
              "etcd lacks the tokens or guid2lid")
        print("master: token and partition 0x0a12 in etcd (partitions generation %d)" % gen)

        # etcd stopped under the running master: it answers from its local copy, says
        # so, and writes back when etcd returns.
        etcd.stop()
        t_down = time.time()
        st, text, _ = add_pkey(sm1, 0x0B34, [guids["h1-1"], guids["h2-1"]])
        expect(st, 200, text, "AddGuidsToPKey 0x0b34 with etcd down")
        wait_applied(sm1, json.loads(text)["generation"])
        s = sm1.wait("degraded", lambda: (lambda x: x if x["degraded"] and x["etcd"] == "unreachable"
                                         else None)(sm1.store(ADMIN)))
        check(s["unsynced"] >= 1 and "local copy" in s.get("note", ""), "the store says %s" % s)
        check("STO-0002" in sm1.text(), "sm1's log does not say etcd is unreachable")
        st, text, _ = sm1.cl.call("GET", "/api/v1/events?since=0", **ADMIN)
        check(st == 200 and '"state_store"' in text and "unreachable" in text,
              "no state_store event: %s" % text[-500:])
        etcd.start()
        sm1.wait("written back", lambda: not sm1.store(ADMIN)["degraded"], timeout=30)
        gen2, doc = etcd.doc("partitions.rest.conf")
        check(gen2 > gen and "0x0b34" in doc.lower(), "0x0b34 not written back: %d %r" % (gen2, doc))
        check(re.search(r"STO-0003 etcd reachable again", sm1.text()) and
              re.search(r"STO-0009 wrote back partitions.rest.conf", sm1.text()),
              "sm1's log does not tell the write-back:\n" + sm1.text()[-2000:])
        print("etcd stopped %.1f s under the master: 0x0b34 answered from the local copy, written back "
              "(generation %d)" % (time.time() - t_down, gen2))
        sm2.wait("the standby's copy current",
                 lambda: sm2.store(ADMIN)["documents"]["partitions.rest.conf"]["generation"] == gen2 and
                 not sm2.store(ADMIN)["degraded"], timeout=30)

        # A host joins the IPoIB broadcast group through the master's SA: the group is in
        # etcd (mcast-groups) before the answer, and so in the standby's copy.
        bcast = "ff12:401b:ffff::ffff:ffff"
        r = b.run([a.sa_client, "join", bcast, "full"], work, sock, timeout=30, check=False,
                  env={"SIM_HOST": "h2-0"})
        check(r.returncode == 0 and "status 0x0000 mlid 0xc000" in r.stdout,
              "join from h2-0: rc %d %s %s" % (r.returncode, r.stdout, r.stderr[-300:]))
        member = "0x%016x" % guids["h2-0"]
        check(member in etcd.doc("mcast-groups")[1], "etcd's mcast-groups lacks h2-0: %r" % etcd.doc("mcast-groups")[1])
        sm2.wait("the standby's copy of mcast-groups",
                 lambda: member in open(os.path.join(sm2.dir, "state", "mcast-groups")).read()
                 if os.path.exists(os.path.join(sm2.dir, "state", "mcast-groups")) else False, timeout=30)

        lids_before = lids(work, sock)
        g2 = int(sm2.sm(ADMIN)["guid"], 16)
        sm1.proc.send_signal(signal.SIGKILL)
        sm1.proc.wait(timeout=10)
        t0 = time.time()
        sm2.wait("master", lambda: master_from(work, sock) == g2 and "SUBNET UP" in sm2.text(), timeout=40)
        took = time.time() - t0
        check(lids(work, sock) == lids_before, "LIDs changed in the takeover")
        for h, want in (("h1-0", 0x8A12), ("h2-0", 0x8A12), ("h1-1", 0x8B34), ("h2-1", 0x8B34)):
            sm2.wait("%s holding 0x%04x" % (h, want), lambda: want in held_pkeys(work, sock, guids[h]))
        for h in ("h0-0", "h0-1"):
            check(not ({0x8A12, 0x8B34} & set(held_pkeys(work, sock, guids[h]))), "%s holds a REST P_Key" % h)
        # The group came with the takeover: the new master answers h2-0's membership at
        # 0xC000 (ibsim's hosts never re-register: it is what sm2 read from its copy).
        check(re.search(r"MC-0004 multicast groups read back: \d+ groups, [1-9]\d* members", sm2.text()),
              "sm2 did not read the multicast groups back:\n" + sm2.text()[-2000:])
        gid = str(ipaddress.IPv6Address((0xfe80 << 112) | guids["h2-0"]))
        mr = b.run(["saquery", "MCMR", "--gid", gid], work, sock, check=False, env={"SIM_HOST": "h1-1"})
        check(mr.returncode == 0 and "0xc000" in mr.stdout.lower(),
              "saquery MCMR --gid %s on the new master: rc %d\n%s" % (gid, mr.returncode, mr.stdout))
        st, text, _ = sm2.cl.call("GET", "/api/v1/sm", **bearer)
        expect(st, 200, text, "the old master's token on the new one")
        sm2.wait("holding the master key", lambda: sm2.store(ADMIN)["holds_master_key"], timeout=LEASE_S + 10)
        st, text, _ = add_pkey(sm2, 0x0C56, [guids["h3-0"]])
        expect(st, 200, text, "a partition on the new master")
        check(etcd.doc("partitions.rest.conf")[0] > gen2, "the new master's change is not in etcd")
        print("kill -9 of the master: sm2 master in %.1f s, every LID kept, 0x0a12 and 0x0b34 on their "
              "ports, h2-0 still in 0xC000 (saquery), the old token accepted, the key held and written" % took)


def fencing(a):
    """The master alone, frozen (SIGSTOP) past its lease; another SM starts (priority 5,
    so that the thawed one yields to it: with the old one outranking it, IBTA's election
    would rightly make the old one master again), becomes master and takes the key.
    Thawed, the old master's change is refused by the store, and etcd never shows it."""
    with scenario(a, "etcd-fencing") as (work, sock, etcd, conf, users, sms):
        old = Sm(a, work, sock, "sm1", "h0-0", 1, conf, users).start()
        sms.append(old)
        old.wait("SUBNET UP", lambda: "SUBNET UP" in old.text())
        old.wait("holding the master key", lambda: old.store(ADMIN)["holds_master_key"])
        guids = host_guids(old)
        before = etcd.doc("partitions.rest.conf")
        os.kill(old.proc.pid, signal.SIGSTOP)
        t0 = time.time()
        new = Sm(a, work, sock, "sm2", "h3-1", 5, conf, users).start()
        sms.append(new)
        new.wait("master holding the key",
                 lambda: new.sm(ADMIN)["state"] == "MASTER" and new.store(ADMIN)["holds_master_key"], timeout=40)
        print("old master frozen: the new SM master and holding the key after %.1f s" % (time.time() - t0))
        os.kill(old.proc.pid, signal.SIGCONT)
        st, text, _ = add_pkey(old, 0x0D78, [guids["h1-0"]])
        check(st == 503 and "not_master" in text and "state store" in text,
              "the thawed master's change: HTTP %d %s" % (st, text[:300]))
        old.wait("standing by", lambda: old.sm(ADMIN)["state"] == "STANDBY", timeout=30)
        time.sleep(LEASE_S + 1)
        gen, doc = etcd.doc("partitions.rest.conf")
        check("0x0d78" not in doc.lower(), "etcd shows the fenced master's change: %r" % doc)
        check((gen, doc) == before or gen > before[0], "etcd's partitions went back")
        check(etcd.ctl("get", "--print-value-only", PREFIX + "/master").stdout.startswith(
            "0x%016x" % int(new.sm(ADMIN)["guid"], 16)), "PREFIX/master does not name the new master")
        print("thawed old master: its change refused (503 not_master: %s), etcd never shows it; it stands by" %
              json.loads(text)["error"]["message"][:90])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--sa-client", required=True, help="the weft_sa_client binary")
    a = ap.parse_args()
    try:
        failover(a)
        fencing(a)
    except (b.Failure, subprocess.SubprocessError) as e:
        print("FAIL: %s" % e, file=sys.stderr)
        sys.exit(1)
    print("PASS etcd")


if __name__ == "__main__":
    main()
