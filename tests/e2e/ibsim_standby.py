#!/usr/bin/env python3
"""Two SMs on one ibsim fabric, attached at two nodes (SIM_HOST): weft beside weft and
beside OpenSM 3.3.23, in the orders an admin meets them.

Each scenario starts a fresh fabric, the first SM, then the second, and checks:
- exactly one master, by each SM's own SMInfo (`sminfo -D` from a third node), and it
  is the SM that should win (the higher priority; a running master is followed, then
  hands over); when that is weft, `sminfo` through the third node's SM LID finds it
  too (an OpenSM handed over to from STANDBY sometimes never sweeps: 3.3.23 then
  claims MASTER but leaves the ports pointing at the old one);
- the standby writes nothing: its SubnSet count (weft's /api/v1/sm mads.sets) does not
  move while it stands by; an OpenSM standby leaves weft's tables as they are (every
  LFT block, read back with dump_fts, unchanged);
- LIDs do not change when mastership moves;
- `kill -9` of the master: the standby is master, a weft standby after exactly
  polling_retry_number + 1 unanswered polls (counted in its log; the time is printed),
  with every LID unchanged and routes right.
Everything started is stopped by PID, also on failure."""
import argparse
import base64
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ibsim_bringup as b  # noqa: E402

TOPO = "ft2:leaves=4,spines=2,hosts=2"  # hosts h0-0 .. h3-1
POLL_MS, RETRIES = 1000, 2


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def check(cond, what):
    if not cond:
        raise b.Failure(what)


class Sm:
    """One SM process under umad2sim at node `host`; stopped by PID."""

    def __init__(self, kind, name, host, prio, work, sock, weft=None, users=None, engine=None):
        self.kind, self.name, self.host, self.prio = kind, name, host, prio
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir, exist_ok=True)
        self.log = os.path.join(self.dir, "log")
        self.out = os.path.join(self.dir, "stdout")  # weft prints each heavy sweep's summary here
        self.sock, self.proc, self.port = sock, None, None
        # What start() preloads (a subclass may put a shim in front of umad2sim) and
        # adds to the environment.
        self.preload, self.env = b.UMAD2SIM, {}
        if kind == "weft":
            self.port = free_port()
            self.cmd = [weft, "sm", "--state-dir", os.path.join(self.dir, "state"), "--log-file", self.log,
                        "--priority", str(prio), "--polling-timeout", str(POLL_MS), "--polling-retries",
                        str(RETRIES), "--sweep-interval", "1", "--rest", "127.0.0.1:%d" % self.port,
                        "--rest-users", users]
        else:
            conf = os.path.join(self.dir, "opensm.conf")
            with open(conf, "w") as f:
                f.write("sminfo_polling_timeout %d\npolling_retry_number %d\nsm_priority %d\n" % (POLL_MS, RETRIES, prio))
            self.cmd = ["opensm", "-F", conf, "-f", self.log, "-d", "2", "-s", "1"]
        if engine:
            self.set_option("routing_engine", engine)

    def set_option(self, name, value):
        """An option in weft's spelling (--routing-engine) or opensm.conf's."""
        if self.kind == "weft":
            self.cmd += ["--" + name.replace("_", "-"), value]
        else:
            with open(os.path.join(self.dir, "opensm.conf"), "a") as f:
                f.write("%s %s\n" % (name, value))

    def start(self):
        env = dict(os.environ, IBSIM_SOCKNAME=self.sock, LD_PRELOAD=self.preload, ASAN_OPTIONS=b.ASAN_OPTIONS,
                   SIM_HOST=self.host, OSM_TMP_DIR=self.dir, OSM_CACHE_DIR=self.dir, **self.env)
        with open(self.out, "w") as out:
            self.proc = subprocess.Popen(self.cmd, cwd=self.dir, env=env, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        return self

    def stdout(self):
        return open(self.out, errors="replace").read() if os.path.exists(self.out) else ""

    def text(self):
        return open(self.log, errors="replace").read() if os.path.exists(self.log) else ""

    def master_summary(self, out_before):
        """The body of the first summary weft printed after `out_before` (its stdout
        then): it must say SUBNET UP."""
        text = self.stdout()[len(out_before):]
        m = re.search(r"^weft: (SUBNET UP|subnet NOT up.*)$(.*?)^  problems", text, re.M | re.S)
        if not m:
            raise b.Failure("%s printed no summary as master after the kill:\n%s" % (self.name, text[-2000:]))
        if m.group(1) != "SUBNET UP":
            raise b.Failure("%s's takeover sweep: %s" % (self.name, m.group(1)))
        return m.group(2)

    def wait(self, pattern, count=1, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if len(re.findall(pattern, self.text())) >= count:
                return
            if self.proc.poll() is not None:
                raise b.Failure("%s exited %s waiting for %r:\n%s" % (self.name, self.proc.returncode, pattern,
                                                                     self.text()[-2500:]))
            time.sleep(0.05)
        raise b.Failure("%s: no %d x %r in %d s:\n%s" % (self.name, count, pattern, timeout, self.text()[-2500:]))

    def api(self, path="/api/v1/sm"):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            auth = base64.b64encode(b"mon:monpass").decode()
            c.request("GET", path, headers={"Authorization": "Basic " + auth})
            r = c.getresponse()
            body = r.read().decode()
            check(r.status == 200, "%s %s: HTTP %d %s" % (self.name, path, r.status, body[:300]))
            return json.loads(body)
        finally:
            c.close()

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self):
        if self.proc:
            b.stop_process(self.proc)


def write_users(path):
    """A REST users file with the monitor user Sm.api() logs in as."""
    h = subprocess.run(["openssl", "passwd", "-6", "-stdin"], input="monpass", capture_output=True, text=True,
                       check=True).stdout.strip()
    with open(path, "w") as f:
        f.write("mon:%s:monitor\n" % h)
    os.chmod(path, 0o600)
    return path


def lids_of(nodes):
    """The LID of every switch (by GUID) and CA port (by GUID and port), as parsed from
    ibnetdiscover."""
    lids = {}
    for guid, n in nodes.items():
        if n["type"] == "Switch":
            lids[guid] = n["lid"]
        else:
            for port, (_, _, lid) in n["ports"].items():
                lids[(guid, port)] = lid
    return lids


def fabric_state(work, sock):
    """(LID of every port GUID, the LFTs, routing problems) as the tools read them."""
    text = b.run(["ibnetdiscover"], work, sock, env={"SIM_HOST": "h1-0"}).stdout
    nodes = b.parse_ibnetdiscover(text)
    lids = lids_of(nodes)
    lfts = b.parse_dump_fts(b.run(["dump_fts", "-n"], work, sock, env={"SIM_HOST": "h1-0"}).stdout)
    pairs, problems = b.check_routes(nodes, lfts)
    return lids, lfts, pairs, problems


def master_guid(work, sock, must=True):
    """The master as `sminfo` finds it from a third node (through the SM LID that
    node's port holds); None while that SM is not (yet, or no longer) master."""
    info = b.run(["sminfo"], work, sock, env={"SIM_HOST": "h1-0"}, check=False).stdout
    m = re.search(r"sm lid (\d+) sm guid 0x([0-9a-f]+).*SMINFO_MASTER", info)
    check(m or not must, "sminfo finds no master: " + info)
    return int(m.group(2), 16) if m else None


# Directed routes from h1-0 (the third node) to the two SMs' nodes in TOPO: leaf1 port 3 is
# spine0, whose port k+1 leads to leaf k.
DR_TO = {"h0-0": "0,1,3,1,1", "h3-1": "0,1,3,4,2"}


def claims(work, sock):
    """{port GUID: state} of the two SMs, asked directly (SMInfo by directed route)."""
    out = {}
    for host, path in DR_TO.items():
        info = b.run(["sminfo", "-D", path], work, sock, env={"SIM_HOST": "h1-0"}, check=False).stdout
        m = re.search(r"sm guid 0x([0-9a-f]+).*state \d+ SMINFO_(\w+)", info)
        if m:
            out[int(m.group(1), 16)] = m.group(2)
    return out


def one_master(work, sock, want, label, timeout=30):
    """Until exactly one of the two SMs claims MASTER and it is `want`."""
    deadline = time.time() + timeout
    while True:
        c = claims(work, sock)
        masters = [g for g, st in c.items() if st == "MASTER"]
        if masters == [want]:
            return c
        if time.time() > deadline:
            raise b.Failure("%s: the SMs claim %s; wanted 0x%x alone as MASTER" %
                            (label, {hex(g): st for g, st in c.items()}, want))
        time.sleep(0.2)


def port_guid_of(work, sock, host):
    out = b.run(["smpquery", "-D", "nodeinfo", "0"], work, sock, env={"SIM_HOST": host}).stdout
    return int(re.search(r"PortGuid:\.*(0x[0-9a-f]+)", out).group(1), 16)


def scenario(a, users, first, second, winner):
    """`first` and `second`: (kind, priority). The SM that should end as master is
    `winner` ("first" or "second")."""
    label = "%s(prio %d) then %s(prio %d)" % (first[0], first[1], second[0], second[1])
    work = os.path.join(a.scratch, "standby-%s%d-%s%d" % (first[0], first[1], second[0], second[1]))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    net = os.path.join(work, "ft.net")
    b.run([a.weft, "topo", TOPO, "-o", net], work, "", preload=False)
    sock = "weft-e2e-standby-%d-%s" % (os.getpid(), os.path.basename(work))
    with b.Ibsim(net, work, sock):
        sm1 = Sm(first[0], "sm1", "h0-0", first[1], work, sock, a.weft, users)
        sm2 = Sm(second[0], "sm2", "h3-1", second[1], work, sock, a.weft, users)
        try:
            sm1.start()
            sm1.wait(r"SUBNET UP")
            g1, g2 = port_guid_of(work, sock, "h0-0"), port_guid_of(work, sock, "h3-1")
            lids0, lfts0, _, problems = fabric_state(work, sock)
            check(not problems, "%s: after the first SM: %s" % (label, problems[:3]))
            sm2.start()
            win, lose = (sm1, sm2) if winner == "first" else (sm2, sm1)
            wguid, lguid = (g1, g2) if winner == "first" else (g2, g1)
            # The second one comes up standby, or outranks the master: then the master
            # hands over, on the trap 144 ibsim sends when the newcomer sets IsSM (or the
            # one weft sends on entering STANDBY), before or after the newcomer's sweep.
            if second[0] == "weft":
                sm2.wait(r"STANDBY|entering MASTER")
            else:
                sm2.wait(r"Entering (STANDBY|MASTER) state")
            # Exactly one master, the one that should win, by each SM's own SMInfo.
            one_master(work, sock, wguid, label)
            if win.kind == "weft":
                win.wait(r"SUBNET UP", 1, 30)
                # weft as master points every port at itself: sminfo through the third
                # node's SM LID finds it.
                deadline = time.time() + 10
                while time.time() < deadline and master_guid(work, sock, must=False) != wguid:
                    time.sleep(0.2)
                check(master_guid(work, sock) == wguid, "%s: the ports' SM LID is not weft's" % label)
            # Settled: it stays so.
            time.sleep(1.5)
            one_master(work, sock, wguid, label, timeout=0)
            if lose.kind == "weft":
                st = lose.api()
                check(st["state"] == "STANDBY", "%s: the loser is %s, not STANDBY" % (label, st["state"]))
                check(st["master"] and int(st["master"]["guid"], 16) == wguid,
                      "%s: the standby names master %s" % (label, st["master"]))
                sets0 = st["mads"]["sets"]
                time.sleep(2.5)  # two polls and more
                st = lose.api()
                check(st["mads"]["sets"] == sets0,
                      "%s: the standby wrote %d SubnSets while standing by" % (label, st["mads"]["sets"] - sets0))
                print("%s: weft standby under 0x%x: 0 writes in 2.5 s (%d SMPs sent, polls)" %
                      (label, wguid, st["mads"]["sent"]))
            else:
                check("Entering STANDBY state" in lose.text(), "%s: OpenSM did not stand by" % label)
            if win.kind == "weft":
                st = win.api()
                check(st["state"] == "MASTER", "%s: the winner is %s" % (label, st["state"]))
                others = [o for o in st["other_sms"] if int(o["guid"], 16) == lguid]
                check(others and others[0].get("state") == "STANDBY",
                      "%s: the master does not see the other SM standing by: %s" % (label, st["other_sms"]))
            lids1, lfts1, pairs, problems = fabric_state(work, sock)
            check(not problems, "%s: routes after the handover: %s" % (label, problems[:3]))
            check(lids1 == lids0, "%s: LIDs changed when mastership settled" % label)
            if win is sm1 and lose.kind == "opensm":
                check(lfts1 == lfts0, "%s: the OpenSM standby changed the LFTs" % label)
            print("%s: master 0x%x (%s), standby 0x%x; %d (switch, LID) pairs route, LIDs unchanged" %
                  (label, wguid, win.kind, lguid, pairs))

            # The master dies: the standby takes over.
            ups = len(re.findall(r"SUBNET UP", lose.text()))
            masters = len(re.findall(r"Entering MASTER state", lose.text()))
            at_kill = len(lose.text())
            t0 = time.time()
            win.kill9()
            if lose.kind == "opensm":
                lose.wait(r"Entering MASTER state", masters + 1, 120)
            lose.wait(r"SUBNET UP", ups + 1, 60)
            took = time.time() - t0
            deadline = time.time() + 10
            while time.time() < deadline and master_guid(work, sock, must=False) != lguid:
                time.sleep(0.2)
            check(master_guid(work, sock) == lguid, "%s: after kill -9 the master is not the standby" % label)
            check(claims(work, sock).get(lguid) == "MASTER", "%s: the standby does not claim MASTER" % label)
            lids2, _, pairs, problems = fabric_state(work, sock)
            check(not problems, "%s: routes after the takeover: %s" % (label, problems[:3]))
            check(lids2 == lids0, "%s: LIDs changed in the takeover" % label)
            if lose.kind == "weft":
                # It takes over at the first chance: the master's polls unanswered 1, 2 ...
                # polling_retry_number + 1 times in a row, then gone (counted, not timed).
                after = lose.text()[at_kill:]
                polls = [int(n) for n in re.findall(r"did not answer its poll \((\d+) in a row\)", after)]
                # Or sooner: the dead master's port announces (trap 144, ibsim clears IsSM when
                # its process goes) and the sweep that follows finds no other SM.
                by_polls = polls == list(range(1, RETRIES + 2)) and "is gone: taking over" in after
                by_trap = (polls == list(range(1, len(polls) + 1)) and len(polls) <= RETRIES + 1
                           and "trap 144" in after and "entering MASTER state: no other SM" in after)
                check(by_polls or by_trap,
                      "%s: weft took over after polls %s, want 1..%d then 'taking over' (or a trap 144 "
                      "and a sweep that finds no other SM):\n%s" % (label, polls, RETRIES + 1, after[-2000:]))
            print("%s: kill -9 of the master: %s standby master and SUBNET UP in %.2f s (polls of %d ms, %d "
                  "retries); LIDs unchanged" % (label, lose.kind, took, POLL_MS, RETRIES))
        finally:
            sm2.stop()
            sm1.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--only", help="one scenario, e.g. weft1-weft5")
    a = ap.parse_args()
    os.makedirs(a.scratch, exist_ok=True)
    users = write_users(os.path.join(a.scratch, "standby-users"))
    scenarios = [
        (("weft", 1), ("weft", 5), "second"),   # a higher weft joins: handover
        (("weft", 5), ("weft", 1), "first"),    # a lower weft joins: it stands by
        (("opensm", 1), ("weft", 5), "second"),  # weft outranks a running OpenSM: OpenSM hands over
        (("opensm", 5), ("weft", 1), "first"),   # weft stands by under OpenSM
        (("weft", 5), ("opensm", 1), "first"),   # OpenSM stands by under weft
        (("weft", 1), ("opensm", 5), "second"),  # OpenSM outranks a running weft: weft hands over
    ]
    for first, second, winner in scenarios:
        name = "%s%d-%s%d" % (first[0], first[1], second[0], second[1])
        if a.only and a.only != name:
            continue
        scenario(a, users, first, second, winner)
    print("PASS standby")


if __name__ == "__main__":
    b.run_main(main)
