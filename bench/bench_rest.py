#!/usr/bin/env python3
"""weft's REST API under load, on ibsim's 444-switch fat tree (3,456 CAs), with wrk.

1. GET /api/v1/nodes (its first page: 1,000 nodes) and /ufmRest/resources/pkeys
   (every P_Key, ?guids_data=true): requests/s and p50/p99 latency, closed loop
   (16 connections) and paced (about 1,000 requests/s: 10 connections, each waiting
   10 ms between requests), idle and while weft runs heavy sweeps back to back.
2. Bring-up (a fresh ibsim each time: SUBNET UP's time in the log) and the SA flood
   (weft_sa_flood: 100,000 PathRecord GetTables, 16 in flight), without and with the
   paced REST load; OpenSM's bring-up and flood on the same fabric beside them.
3. A partition change: POST /ufmRest/resources/pkeys with 16 hosts' GUIDs, from its
   200 to the P_Key in the last of those ports' tables (weft_pkey_watch polls them);
   OpenSM's way beside it: partitions.conf rewritten, SIGHUP, the same watch.
Prints tables. Everything started is stopped by PID.
"""
import argparse
import base64
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import ibsim_bringup as b  # noqa: E402
sys.path.insert(0, HERE)
from bench_bringup import ibsim_args  # noqa: E402

SPEC = "ft3:pods=8,leaves=24,aggs=18,hosts=18,cores=6,links=2"  # 444 switches, 3,456 CAs
FLOOD = 100000  # PathRecord GetTables per flood run


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Weft:
    def __init__(self, weft, work, sock, port, extra=()):
        self.port = port
        self.log = os.path.join(work, "weft.log")
        state = os.path.join(work, "state")
        self.cmd = [weft, "sm", "--state-dir", state, "--log-file", self.log, "--sweep-interval", "0",
                    "--rest", "127.0.0.1:%d" % port] + list(extra)
        self.work, self.sock, self.state = work, sock, state
        self.proc = None

    def start(self):
        env = dict(os.environ, IBSIM_SOCKNAME=self.sock, LD_PRELOAD=b.UMAD2SIM)
        self.proc = subprocess.Popen(self.cmd, cwd=self.work, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        return self

    def wait_up(self, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            text = open(self.log, errors="replace").read() if os.path.exists(self.log) else ""
            m = re.search(r"SUBNET UP: .*?, (\d+) ms", text)
            if m and "REST API on" in text:
                pw = open(os.path.join(self.state, "rest-admin-password")).read().strip()
                self.authz = "Basic " + base64.b64encode(pw.encode()).decode()
                return int(m.group(1))
            if self.proc.poll() is not None:
                raise b.Failure("weft exited %d:\n%s" % (self.proc.returncode, text[-1500:]))
            time.sleep(0.02)
        raise b.Failure("weft: no SUBNET UP in %d s" % timeout)

    def call(self, method, path, body=None):
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Authorization": self.authz, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def stop(self):
        if self.proc:
            b.stop_process(self.proc)


def port_open(port):
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def ms(v, unit):
    return float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def wrk(url, authz, seconds, conns, paced, work):
    """wrk against one URL: requests/s, p50, p99 (ms), non-2xx count."""
    args = ["wrk", "-t", "2", "-c", str(conns), "-d", "%ds" % seconds, "--latency", "-H", "Authorization: " + authz]
    if paced:
        script = os.path.join(work, "paced.lua")
        with open(script, "w") as f:
            f.write("function delay()\n  return 10\nend\n")
        args += ["-s", script]
    out = subprocess.run(args + [url], capture_output=True, text=True, timeout=seconds + 60).stdout
    lat = dict((p, ms(v, u)) for p, v, u in re.findall(r"^\s+(\d+)%\s+([\d.]+)(us|ms|s)\s*$", out, re.M))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errs = re.search(r"Socket errors: (.*)", out)
    return {"rps": rps, "p50": lat.get("50", 0.0), "p99": lat.get("99", 0.0), "non2xx": int(bad.group(1)) if bad else 0,
            "errors": errs.group(1) if errs else ""}


class Sweeper(threading.Thread):
    """Asks weft for heavy sweeps back to back: each as soon as the last one ended."""

    def __init__(self, w):
        super().__init__(daemon=True)
        self.w, self.stop_flag, self.done, self.ms = w, threading.Event(), 0, []

    def run(self):
        _, sm = self.w.call("GET", "/api/v1/sm")
        seen = sm["sweeps"]["heavy"]
        while not self.stop_flag.is_set():
            self.w.call("POST", "/api/v1/sweep", {"type": "heavy"})
            while not self.stop_flag.is_set():
                _, sm = self.w.call("GET", "/api/v1/sm")
                if sm["sweeps"]["heavy"] > seen:
                    seen = sm["sweeps"]["heavy"]
                    self.done += 1
                    self.ms.append(sm["last_sweep"]["phases_ms"]["total"])
                    break
                time.sleep(0.005)

    def stop(self):
        self.stop_flag.set()
        self.join(timeout=30)


class Load:
    """The paced REST load (about 1,000 GET /api/v1/nodes per second) in the
    background until stop(). wrk runs at nice 19: it stands for clients on other hosts,
    and on a 2-CPU machine the load generator must not be what takes the SM's CPU."""

    def __init__(self, port, authz, work, path="/api/v1/nodes"):
        script = os.path.join(work, "paced.lua")
        with open(script, "w") as f:
            f.write("function delay()\n  return 10\nend\n")
        self.proc = subprocess.Popen(["nice", "-n", "19", "wrk", "-t", "2", "-c", "10", "-d", "600s", "-s", script,
                                      "-H", "Authorization: " + authz, "http://127.0.0.1:%d%s" % (port, path)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def stop(self):
        b.stop_process(self.proc)


def held(work, sock, lid, pkey):
    out = b.run(["smpquery", "pkeys", str(lid), "1"], work, sock, check=False).stdout
    return any(int(x, 16) & 0x7fff == pkey for x in re.findall(r"0x[0-9a-f]{4}", out))


def wait_all_hold(work, sock, lids, pkey, t0, timeout=60):
    pending = list(lids)
    while pending:
        if time.time() - t0 > timeout:
            raise b.Failure("P_Key 0x%04x not on LIDs %s after %d s" % (pkey, pending, timeout))
        pending = [lid for lid in pending if not held(work, sock, lid, pkey)]
    return time.time() - t0


def flood(a, work, sock, lids):
    fl = b.run([a.flood, "--lids", "%d-%d" % (min(lids), max(lids)), "--queries", str(FLOOD), "--window", "16"],
               work, sock, check=False, timeout=600)
    m = re.search(r"answered (\d+) valid.*, ([\d.]+) s, (\d+) queries/s", fl.stdout)
    if not m or int(m.group(1)) != FLOOD:
        raise b.Failure("flood: " + fl.stdout[-500:] + fl.stderr[-500:])
    return int(m.group(3))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--flood", required=True, help="the weft_sa_flood binary")
    ap.add_argument("--watch", required=True, help="the weft_pkey_watch binary")
    ap.add_argument("--seconds", type=int, default=10, help="each wrk run")
    ap.add_argument("--runs", type=int, default=3, help="bring-ups and floods of each kind")
    ap.add_argument("--scratch", default="/tmp/weft-bench-rest")
    ap.add_argument("--only", choices=("latency", "bringup", "pkey"), help="one part of the three")
    a = ap.parse_args()
    shutil.rmtree(a.scratch, ignore_errors=True)
    os.makedirs(a.scratch)
    net = os.path.join(a.scratch, "fabric.net")
    b.run([a.weft, "topo", SPEC, "-o", net], a.scratch, "", preload=False)
    sargs = ibsim_args(net)[0]
    ok = True

    # 1. Latency and throughput, idle and during sweeps.
    if a.only in (None, "latency"):
        ok &= latency(a, net, sargs)
    if a.only in (None, "bringup"):
        bringup(a, net, sargs)
    if a.only in (None, "pkey"):
        pkey_change(a, net, sargs)
    return 0 if ok else 1


def latency(a, net, sargs):
    ok = True
    work = os.path.join(a.scratch, "latency")
    os.makedirs(work)
    sock = "weft-bench-rest-%d" % os.getpid()
    rows = []
    with b.Ibsim(net, work, sock, extra_args=sargs):
        w = Weft(a.weft, work, sock, free_port()).start()
        try:
            w.wait_up()
            # A few partitions, as a cluster would have.
            _, ports = w.call("GET", "/ufmRest/resources/ports")
            hosts = [p["guid"] for p in ports if p["system_name"].startswith("h")][:64]
            for i in range(8):
                w.call("POST", "/ufmRest/resources/pkeys", {"pkey": "0x%x" % (0x100 + i),
                                                            "guids": hosts[i * 8:(i + 1) * 8]})
            paths = [("/api/v1/nodes", "GET /api/v1/nodes"),
                     ("/ufmRest/resources/pkeys?guids_data=true", "GET /ufmRest/resources/pkeys")]
            for sweeping in (False, True):
                sw = Sweeper(w) if sweeping else None
                if sw:
                    sw.start()
                for path, name in paths:
                    for paced in (False, True):
                        r = wrk("http://127.0.0.1:%d%s" % (w.port, path), w.authz, a.seconds, 10 if paced else 16,
                                paced, work)
                        rows.append((name, "heavy sweeps back to back" if sweeping else "idle",
                                     "paced, 10 conns" if paced else "closed loop, 16 conns", r))
                if sw:
                    sw.stop()
                    rows.append(("(sweeps during the runs)", "%d heavy sweeps" % sw.done,
                                 "median %.0f ms" % statistics.median(sw.ms) if sw.ms else "-", None))
        finally:
            w.stop()
    print("| request | SM | load | requests/s | p50 ms | p99 ms | non-2xx |")
    print("|---|---|---|---|---|---|---|")
    for name, state, load, r in rows:
        if r is None:
            print("| %s | %s | %s | | | | |" % (name, state, load))
            continue
        print("| %s | %s | %s | %.0f | %.2f | %.2f | %d |" % (name, state, load, r["rps"], r["p50"], r["p99"],
                                                             r["non2xx"]))
        ok &= r["non2xx"] == 0
    print()
    return ok


def wait_log(proc, log, pattern, timeout=300):
    """Seconds until `pattern` shows in `log` (polled every 5 ms)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if os.path.exists(log) and pattern in open(log, errors="replace").read():
            return time.monotonic() - t0
        if proc.poll() is not None:
            raise b.Failure("%s exited %d" % (log, proc.returncode))
        time.sleep(0.005)
    raise b.Failure("no %r in %s" % (pattern, log))


def bringup(a, net, sargs):
    """2. Bring-up and SA flood, without and with the paced load; OpenSM beside them.
    The kinds take turns run by run, each on a fresh ibsim; bring-up is the wall time
    from the SM's start to SUBNET UP in its log, the same for both SMs."""
    # The load's answers are 230 kB each (a page of 1,000 nodes); with ?limit=100, 23 kB:
    # what the load costs is mostly moving those bytes.
    loads = {"weft + REST load": "/api/v1/nodes", "weft + REST load, limit=100": "/api/v1/nodes?limit=100"}
    kinds = ("opensm", "weft") + tuple(loads)
    ups = {k: [] for k in kinds}
    floods = {k: [] for k in kinds}
    sweeps = {k: [] for k in kinds}  # weft's own figure: the bring-up sweep's ms
    for run in range(a.runs):
        for who in kinds:
            work = os.path.join(a.scratch, "%s-%d" % (who.replace(" ", "").replace("+", "-"), run))
            os.makedirs(work)
            sock = "weft-bench-rest-%d-%s-%d" % (os.getpid(), who[:5].strip(), run)
            with b.Ibsim(net, work, sock, extra_args=sargs):
                time.sleep(1)  # ibsim settles; the last run's processes are gone
                load = None
                if who == "opensm":
                    log = os.path.join(work, "opensm.log")
                    env = dict(os.environ, IBSIM_SOCKNAME=sock, LD_PRELOAD=b.UMAD2SIM, OSM_TMP_DIR=work,
                               OSM_CACHE_DIR=work)
                    proc = subprocess.Popen(["opensm", "-f", log, "-d", "2"], cwd=work, env=env,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                            start_new_session=True)
                else:
                    w = Weft(a.weft, work, sock, free_port())
                    log = w.log
                    w.start()
                    proc = w.proc
                try:
                    if who in loads:
                        # The load starts as soon as the REST port is up, before the first
                        # sweep is done (the server starts first; wrk needs the port).
                        deadline = time.time() + 30
                        while not port_open(w.port):
                            if time.time() > deadline or proc.poll() is not None:
                                raise b.Failure("weft's REST port did not open")
                            time.sleep(0.002)
                        pw = open(os.path.join(w.state, "rest-admin-password")).read().strip()
                        load = Load(w.port, "Basic " + base64.b64encode(pw.encode()).decode(), work, loads[who])
                    ups[who].append(wait_log(proc, log, "SUBNET UP") * 1000)
                    if who != "opensm":
                        m = re.search(r"SUBNET UP: .*?, (\d+) ms", open(log, errors="replace").read())
                        sweeps[who].append(int(m.group(1)))
                    disc = b.parse_ibnetdiscover(b.run(["ibnetdiscover"], work, sock).stdout)
                    floods[who].append(flood(a, work, sock, ca_lids(disc)))
                finally:
                    if load:
                        load.stop()
                    b.stop_process(proc)
    med = {k: (statistics.median(ups[k]), statistics.median(floods[k]),
               statistics.median(sweeps[k]) if sweeps[k] else 0) for k in kinds}
    print("| SM | bring-up: start to SUBNET UP, ms (median of %d) | runs | weft's bring-up sweep, ms | runs "
          "| SA flood queries/s (median) | runs |" % a.runs)
    print("|---|---|---|---|---|---|---|")
    for k in kinds:
        print("| %s | %.0f | %s | %s | %s | %d | %s |" % (
            k, med[k][0], " ".join("%.0f" % x for x in ups[k]), "%.0f" % med[k][2] if sweeps[k] else "-",
            " ".join(str(x) for x in sweeps[k]), med[k][1], " ".join(str(x) for x in floods[k])))
    print()
    for k, path in loads.items():
        print("REST load (about 1,000 GET %s per second; wrk at nice 19): bring-up sweep %+.1f %%, start to "
              "SUBNET UP %+.1f %%, SA flood %+.1f %%" %
              (path, (med[k][2] / med["weft"][2] - 1) * 100, (med[k][0] / med["weft"][0] - 1) * 100,
               (med[k][1] / med["weft"][1] - 1) * 100))
    print("weft's bring-up is %.1fx faster than OpenSM's (start to SUBNET UP), its SA flood rate %.1fx OpenSM's" %
          (med["opensm"][0] / med["weft"][0], med["weft"][1] / med["opensm"][1]))
    print()


class Watch:
    """weft_pkey_watch on these LIDs: started, ready, then done() gives the
    time.monotonic() at which the last of them held the P_Key."""

    def __init__(self, a, work, sock, lids, pkey):
        env = dict(os.environ, IBSIM_SOCKNAME=sock, LD_PRELOAD=b.UMAD2SIM)
        self.proc = subprocess.Popen([a.watch, "--pkey", hex(pkey)] + [str(x) for x in lids], cwd=work, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     start_new_session=True)
        if self.proc.stdout.readline().strip() != "ready":
            raise b.Failure("weft_pkey_watch did not start")

    def done(self):
        try:
            out, _ = self.proc.communicate(timeout=180)
        finally:
            b.stop_process(self.proc)
        m = re.search(r"done ([\d.]+)", out)
        if not m:
            raise b.Failure("weft_pkey_watch: " + out)
        return float(m.group(1))


def pkey_change(a, net, sargs):
    """3. A partition change, from the 2xx (weft) or the SIGHUP (OpenSM) to the last of
    16 ports' P_Key tables, as weft_pkey_watch sees them."""
    rows = []
    for who in ("opensm", "weft"):
        runs = []
        for run in range(a.runs):
            work = os.path.join(a.scratch, "pkey-%s-%d" % (who, run))
            os.makedirs(work)
            sock = "weft-bench-rest-pk-%s-%d-%d" % (who, os.getpid(), run)
            pkey = 0x0a12 + run
            with b.Ibsim(net, work, sock, extra_args=sargs):
                if who == "opensm":
                    log = os.path.join(work, "opensm.log")
                    parts = os.path.join(work, "partitions.conf")
                    with open(parts, "w") as f:
                        f.write("Default=0x7fff, ipoib : ALL=full ;\n")
                    with b.Background(["opensm", "-f", log, "-d", "2", "-P", parts], work, sock, log, wait_s=300,
                                      env={"OSM_TMP_DIR": work, "OSM_CACHE_DIR": work}) as bg:
                        disc = b.parse_ibnetdiscover(b.run(["ibnetdiscover"], work, sock).stdout)
                        lids = ca_lids(disc, 16)
                        time.sleep(2)
                        with open(parts, "a") as f:
                            f.write("bench=0x%04x : %s ;\n" % (pkey, ", ".join(
                                "0x%016x=full" % port_guid(disc, lid) for lid in lids)))
                        watch = Watch(a, work, sock, lids, pkey)
                        t0 = time.monotonic()
                        bg.proc.send_signal(signal.SIGHUP)
                        runs.append((watch.done() - t0, None, None))
                    continue
                w = Weft(a.weft, work, sock, free_port()).start()
                try:
                    w.wait_up()
                    disc = b.parse_ibnetdiscover(b.run(["ibnetdiscover"], work, sock).stdout)
                    lids = ca_lids(disc, 16)
                    body = {"pkey": "0x%04X" % pkey, "index0": True, "ip_over_ib": True, "membership": "full",
                            "guids": ["%016x" % port_guid(disc, lid) for lid in lids]}
                    watch = Watch(a, work, sock, lids, pkey)
                    t0 = time.monotonic()
                    st, ans = w.call("POST", "/ufmRest/resources/pkeys", body)
                    t_2xx = time.monotonic()
                    if st != 200:
                        raise b.Failure("POST pkeys: %d %s" % (st, ans))
                    while w.call("GET", "/api/v1/sm")[1]["partitions"]["applied"] < ans["generation"]:
                        if time.monotonic() - t_2xx > 60:
                            raise b.Failure("generation %d not applied" % ans["generation"])
                        time.sleep(0.002)
                    applied = time.monotonic() - t_2xx
                    runs.append((watch.done() - t_2xx, (t_2xx - t0) * 1000, applied * 1000))
                finally:
                    w.stop()
        rows.append((who, runs))
    print("| partition change: 16 hosts' ports (median of %d) | to the last port's P_Key table, ms | runs |" % a.runs)
    print("|---|---|---|")
    for who, runs in rows:
        secs = statistics.median(r[0] for r in runs) * 1000
        if who == "opensm":
            name = "OpenSM: partitions.conf rewritten, SIGHUP (from the signal)"
        else:
            name = ("weft: POST /ufmRest/resources/pkeys (from its 200, which took %.1f ms; GET /api/v1/sm said "
                    "applied %.0f ms after it)" % (statistics.median(r[1] for r in runs),
                                                   statistics.median(r[2] for r in runs)))
        print("| %s | %.0f | %s |" % (name, secs, " ".join("%.0f" % (r[0] * 1000) for r in runs)))
    print()


def port_guid(disc, lid):
    for n in disc.values():
        for num, pt in n["ports"].items():
            if n["type"] != "Switch" and pt[2] == lid:
                return n["port_guids"][num]
    raise b.Failure("no port with LID %d" % lid)


def ca_lids(disc, k=None):
    """CA port LIDs; with k, k of them spread over the fabric."""
    lids = sorted(pt[2] for n in disc.values() if n["type"] != "Switch" for pt in n["ports"].values())
    return lids if k is None else lids[::max(1, len(lids) // k)][:k]


if __name__ == "__main__":
    b.run_main(main)
