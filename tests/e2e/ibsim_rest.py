#!/usr/bin/env python3
"""weft sm with its REST API on ibsim, checked with the tools that read the fabric.

The requests are those the real clients send: ib-kubernetes' UFM plugin (a body it
formats by hand: "0x%04X", GUIDs without colons), UFM's Slurm prolog and epilog
(hosts_names in hostlist syntax, booleans as strings, "Basic <token>" on /ufmRestV3),
OpenStack's UFM client (PUT to set the GUIDs). What they changed is read back from
the ports with smpquery pkeys (weft's SA resolves the GUIDs). Then:
- users: the generated admin password; operator and monitor users added to the users
  file with `openssl passwd -6` hashes and loaded by SIGHUP; a monitor changes nothing;
- SIGHUP reloads partition_config_file (a bad one is refused, the daemon stays);
- kill -9 right after a 2xx: the restarted SM programs the partition, LIDs unchanged;
- HTTPS with a certificate made by openssl;
- a link pulled in ibsim shows on /api/v1/events (SSE) and in the next sweep;
- /metrics passes promtool check metrics;
- every GET route without parameters answers without a 5xx.
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
import ssl
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ibsim_bringup as b  # noqa: E402

TOPO = "ft2:leaves=4,spines=2,hosts=2"  # hosts h0-0 .. h3-1


def fabric_scratch(weft, scratch, name, topo):
    """A fresh scratch directory for one test with `weft topo`'s net file in it: its
    path, the net file, an ibsim socket name of its own, the state dir and the log."""
    work = os.path.join(scratch, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    net = os.path.join(work, "ft.net")
    b.run([weft, "topo", topo, "-o", net], work, "", preload=False)
    sock = "weft-e2e-%s-%d" % (name, os.getpid())
    return work, net, sock, os.path.join(work, "state"), os.path.join(work, "weft.log")


def admin_password(state):
    """The password weft generated for its REST user admin."""
    line = open(os.path.join(state, "rest-admin-password")).read().strip()
    if not line.startswith("admin:"):
        raise b.Failure("rest-admin-password: " + line)
    return line[len("admin:"):]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Client:
    def __init__(self, port, tls_ca=None):
        self.port, self.tls_ca = port, tls_ca

    def conn(self, timeout=30):
        if self.tls_ca:
            ctx = ssl.create_default_context(cafile=self.tls_ca)
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout, context=ctx)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def call(self, method, path, body=None, user=None, password=None, authz=None, raw=None):
        headers = {}
        if user is not None:
            headers["Authorization"] = "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        if authz:
            headers["Authorization"] = authz
        data = None
        if raw is not None:
            data = raw.encode()
        elif body is not None:
            data = json.dumps(body).encode()
        if data is not None:
            headers["Content-Type"] = "application/json; charset=utf-8"
        c = self.conn()
        try:
            c.request(method, path, body=data, headers=headers)
            r = c.getresponse()
            text = r.read().decode("utf-8", "replace")
            return r.status, text, dict(r.getheaders())
        finally:
            c.close()


class Daemon:
    """weft sm under umad2sim, with REST on `port`; stopped by PID on the way out."""

    def __init__(self, weft, work, sock, state, log, port, extra=()):
        self.cmd = [weft, "sm", "--state-dir", state, "--log-file", log, "--sweep-interval", "2",
                    "--rest", "127.0.0.1:%d" % port] + list(extra)
        self.work, self.sock, self.log = work, sock, log
        self.proc = None

    def start(self, ups=1):
        env = dict(os.environ, IBSIM_SOCKNAME=self.sock, LD_PRELOAD=b.UMAD2SIM, ASAN_OPTIONS=b.ASAN_OPTIONS)
        self.proc = subprocess.Popen(self.cmd, cwd=self.work, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        self.wait_log(r"SUBNET UP", ups, 60)
        self.wait_log(r"REST API on", 1, 10)
        return self

    def log_text(self):
        return open(self.log, errors="replace").read() if os.path.exists(self.log) else ""

    def wait_log(self, pattern, count, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            text = self.log_text()
            if len(re.findall(pattern, text)) >= count:
                return text
            if self.proc.poll() is not None:
                raise b.Failure("weft exited %s waiting for %r:\n%s" % (self.proc.returncode, pattern, text[-2000:]))
            time.sleep(0.05)
        raise b.Failure("no %d x %r in %s after %d s:\n%s" % (count, pattern, self.log, timeout, self.log_text()[-2000:]))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            b.stop_process(self.proc)


def check(cond, what):
    if not cond:
        raise b.Failure(what)


def expect(status, want, text, what):
    check(status == want, "%s: HTTP %d (wanted %d): %s" % (what, status, want, text[:500]))


def held_pkeys(work, sock, guid):
    """The P_Key table of the CA port with this GUID, as smpquery reads it (the GUID
    resolved through weft's SA)."""
    out = b.run(["smpquery", "-G", "pkeys", "0x%016x" % guid, "1"], work, sock).stdout
    keys = []
    for line in out.splitlines():
        m = re.match(r"\s*\d+:\s+(.*)$", line)
        if m:
            keys += [int(x, 16) for x in m.group(1).split()]
    return [k for k in keys if k & 0x7fff]


def wait_applied(cl, auth, gen, timeout=30):
    """Until the SM has written the P_Key tables of partition generation `gen`."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        st, text, _ = cl.call("GET", "/api/v1/sm", **auth)
        if st == 200 and json.loads(text)["partitions"]["applied"] >= gen:
            return
        time.sleep(0.1)
    raise b.Failure("partition generation %d not applied in %d s: %s" % (gen, timeout, text[:300]))


def port_guids(cl, auth):
    st, text, _ = cl.call("GET", "/ufmRest/resources/ports", **auth)
    expect(st, 200, text, "ports")
    out = {}
    for p in json.loads(text):
        if p["system_name"].startswith("h"):
            out[p["system_name"]] = int(p["guid"], 16)
    return out


def lids(work, sock):
    """port GUID -> LID, from ibnetdiscover (what the ports hold)."""
    text = b.run(["ibnetdiscover", "-p"], work, sock).stdout
    out = {}
    for line in text.splitlines():
        m = re.match(r"CA\s+(\d+)\s+\d+\s+(0x[0-9a-f]+)", line)
        if m:
            out[int(m.group(2), 16)] = int(m.group(1))
    return out


def openssl_hash(password, work):
    return subprocess.run(["openssl", "passwd", "-6", "-stdin"], input=password, capture_output=True, text=True,
                          check=True, cwd=work).stdout.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--scratch", required=True)
    a = ap.parse_args()
    work, net, sock, state, log = fabric_scratch(a.weft, a.scratch, "rest", TOPO)
    parts = os.path.join(work, "partitions.conf")
    with open(parts, "w") as f:
        f.write("Default=0x7fff, ipoib : ALL=full ;\n")
    conf = os.path.join(work, "weft.conf")
    with open(conf, "w") as f:
        f.write("partition_config_file %s\n" % parts)
    port = free_port()
    d = None
    with b.Ibsim(net, work, sock) as sim:
        try:
            d = Daemon(a.weft, work, sock, state, log, port, ["--config", conf]).start()
            cl = Client(port)
            pw_line = open(os.path.join(state, "rest-admin-password")).read().strip()
            check(pw_line.startswith("admin:"), "rest-admin-password: " + pw_line)
            admin = {"user": "admin", "password": pw_line[6:]}
            st, text, _ = cl.call("GET", "/ufmRest/app/ufm_version", **admin)
            expect(st, 200, text, "ufm_version")
            st, text, _ = cl.call("GET", "/api/v1/sm", user="admin", password="wrong")
            expect(st, 401, text, "a wrong password")
            guids = port_guids(cl, admin)
            check(len(guids) == 8, "8 host ports: %s" % guids)
            lids_before = lids(work, sock)

            # ib-kubernetes: AddGuidsToPKey's body as it formats it, a VF GUID among them.
            raw = ('{"pkey": "0x%04X", "index0": true, "ip_over_ib": true, "membership": "full", '
                   '"guids": ["%016x","%016x","0200000000000abc"]}' % (0x0A12, guids["h0-0"], guids["h1-0"]))
            st, text, _ = cl.call("POST", "/ufmRest/resources/pkeys", raw=raw, **admin)
            expect(st, 200, text, "ib-kubernetes AddGuidsToPKey")
            wait_applied(cl, admin, json.loads(text)["generation"])
            for h in ("h0-0", "h1-0"):
                keys = held_pkeys(work, sock, guids[h])
                check(keys[:1] == [0x8a12], "%s holds %s, wanted 0x8a12 at index 0" % (h, [hex(k) for k in keys]))
            check(0x8a12 not in held_pkeys(work, sock, guids["h0-1"]), "h0-1 must not hold 0x8a12")
            st, text, _ = cl.call("GET", "/ufmRest/resources/pkeys/?guids_data=true", **admin)
            listed = {g["guid"] for g in json.loads(text)["0xa12"]["guids"]}
            check(listed == {"%016x" % guids["h0-0"], "%016x" % guids["h1-0"], "0200000000000abc"},
                  "ListGuidsInUse sees %s" % listed)
            print("ib-kubernetes: 0x0a12 on h0-0 and h1-0 at index 0 (smpquery pkeys)")
            st, text, _ = cl.call("POST", "/ufmRest/actions/remove_guids_from_pkey",
                                  raw='{"pkey": "0x0A12", "guids": ["%016x"]}' % guids["h1-0"], **admin)
            expect(st, 200, text, "RemoveGuidsFromPKey")
            wait_applied(cl, admin, json.loads(text)["generation"])
            check(0x8a12 not in held_pkeys(work, sock, guids["h1-0"]), "h1-0 still holds 0x8a12")

            # Slurm, with a token on /ufmRestV3.
            st, text, _ = cl.call("POST", "/ufmRest/app/tokens", **admin)
            expect(st, 200, text, "token")
            tok = {"authz": "Basic " + json.loads(text)["access_token"]}
            st, text, _ = cl.call("POST", "/ufmRestV3/resources/pkeys/hosts",
                                  {"hosts_names": "h2-[0-1]", "pkey": "0x1234", "ip_over_ib": "true",
                                   "index0": "false"}, **tok)
            expect(st, 200, text, "Slurm prolog")
            wait_applied(cl, admin, json.loads(text)["generation"])
            for h in ("h2-0", "h2-1"):
                keys = held_pkeys(work, sock, guids[h])
                check(keys[0] == 0xffff and 0x9234 in keys, "%s holds %s" % (h, [hex(k) for k in keys]))
            before = open(os.path.join(state, "partitions.rest.conf")).read()
            st, text, _ = cl.call("POST", "/ufmRestV3/resources/pkeys/hosts",
                                  {"hosts_names": "h3-0,ghost07", "pkey": "0x1234"}, **tok)
            expect(st, 404, text, "an unknown host")
            check("ghost07" in text and before == open(os.path.join(state, "partitions.rest.conf")).read(),
                  "an unknown host must change nothing: " + text)
            st, text, _ = cl.call("DELETE", "/ufmRestV3/resources/pkeys/0x1234/hosts/h2-[0-1]", **tok)
            expect(st, 200, text, "Slurm epilog")
            wait_applied(cl, admin, json.loads(text)["generation"])
            check(0x9234 not in held_pkeys(work, sock, guids["h2-0"]), "h2-0 still holds 0x9234")
            print("Slurm: hosts h2-[0-1] in and out of 0x1234")

            # OpenStack: PUT sets the GUIDs.
            st, text, _ = cl.call("PUT", "/ufmRest/resources/pkeys",
                                  {"guids": ["%016x" % guids["h3-1"]], "ip_over_ib": True, "index0": False,
                                   "membership": "limited", "pkey": "0x2b"}, **admin)
            expect(st, 200, text, "OpenStack PUT")
            wait_applied(cl, admin, json.loads(text)["generation"])
            check(0x002b in held_pkeys(work, sock, guids["h3-1"]), "h3-1 must hold 0x002b (limited)")

            # More users, hashed the way admins do, loaded by SIGHUP; a monitor changes nothing.
            with open(os.path.join(state, "rest-users"), "a") as f:
                f.write("op:%s:operator\nmon:%s:monitor\n" % (openssl_hash("op-pw", work), openssl_hash("mon-pw", work)))
            d.proc.send_signal(signal.SIGHUP)
            d.wait_log(r"REST-0010 .*3 REST users", 1, 10)
            snap = open(os.path.join(state, "partitions.rest.conf")).read()
            mon = {"user": "mon", "password": "mon-pw"}
            op = {"user": "op", "password": "op-pw"}
            st, text, _ = cl.call("GET", "/api/v1/partitions", **mon)
            expect(st, 200, text, "a monitor reads")
            for method, path, body in (("POST", "/ufmRest/resources/pkeys", {"pkey": "0x5", "guids": ["%016x" % guids["h0-1"]]}),
                                       ("DELETE", "/ufmRest/resources/pkeys/0x2b", None),
                                       ("POST", "/api/v1/sweep", {"type": "heavy"})):
                st, text, _ = cl.call(method, path, body, **mon)
                expect(st, 403, text, "a monitor's " + method + " " + path)
            check(snap == open(os.path.join(state, "partitions.rest.conf")).read(),
                  "a monitor's request changed the partitions")
            st, text, _ = cl.call("POST", "/api/v1/partitions",
                                  {"pkey": "0x0c", "members": ["0x%016x" % guids["h0-1"]]}, **op)
            expect(st, 201, text, "an operator makes a partition")
            print("users: generated admin; op and mon from openssl passwd -6 via SIGHUP; mon refused 3 changes")

            # SIGHUP re-reads partition_config_file; a bad one is refused.
            with open(parts, "w") as f:
                f.write("Default=0x7fff, ipoib : ALL=full ;\nlab=0x0300 : 0x%016x=full ;\n" % guids["h1-1"])
            d.proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 30
            while 0x8300 not in held_pkeys(work, sock, guids["h1-1"]):
                check(time.time() < deadline, "partition_config_file reload: h1-1 lacks 0x8300")
                time.sleep(0.2)
            with open(parts, "w") as f:
                f.write("Default=0x7fff : ALL=full ;\nbroken=0x0301 : nonsense\n")
            d.proc.send_signal(signal.SIGHUP)
            d.wait_log(r"CFG-0102 reload refused", 1, 10)
            time.sleep(2.5)  # a light sweep later
            check(0x8300 in held_pkeys(work, sock, guids["h1-1"]) and d.proc.poll() is None,
                  "a bad partitions file must leave the policy in force")
            print("SIGHUP: partition_config_file reloaded (0x8300 on h1-1); a bad one refused")

            # kill -9 right after the answer: nothing acknowledged is lost.
            st, text, _ = cl.call("POST", "/ufmRest/resources/pkeys",
                                  raw='{"pkey": "0x0B0B", "index0": false, "ip_over_ib": true, "membership": "full", '
                                      '"guids": ["%016x"]}' % guids["h3-0"], **admin)
            os.kill(d.proc.pid, signal.SIGKILL)
            expect(st, 200, text, "the last change before kill -9")
            d.proc.wait(timeout=10)
            print("kill -9 right after a 200")
        finally:
            if d:
                d.stop()

        # Again, over HTTPS, from the same state directory (and a partitions file that
        # parses: weft refuses to start on a bad one, exit status 2).
        with open(parts, "w") as f:
            f.write("Default=0x7fff, ipoib : ALL=full ;\nlab=0x0300 : 0x%016x=full ;\n" % guids["h1-1"])
        cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                       check=True, capture_output=True, cwd=work)
        port = free_port()
        log2 = os.path.join(work, "weft2.log")
        d = Daemon(a.weft, work, sock, state, log2, port,
                   ["--config", conf, "--rest-tls-cert", cert, "--rest-tls-key", key])
        try:
            d.start()
            cl = Client(port, tls_ca=cert)
            st, text, _ = cl.call("GET", "/api/v1/partitions/0x0b0b?members=1", **admin)
            expect(st, 200, text, "the partition made before kill -9, over HTTPS")
            keys = held_pkeys(work, sock, guids["h3-0"])
            check(0x8b0b in keys, "after kill -9 and restart h3-0 holds %s" % [hex(k) for k in keys])
            check(lids(work, sock) == lids_before, "LIDs changed across the restart")
            print("restart over HTTPS: 0x0b0b on h3-0, %d LIDs unchanged" % len(lids_before))
            try:
                Client(port).call("GET", "/healthz")
                raise b.Failure("plain HTTP answered on the HTTPS port")
            except (http.client.HTTPException, ConnectionError, OSError):
                pass

            # Events: a link pulled in ibsim.
            seen = []
            c = cl.conn(timeout=40)
            c.request("GET", "/api/v1/events", headers={
                "Accept": "text/event-stream",
                "Last-Event-ID": str(json.loads(cl.call("GET", "/api/v1/events?since=0", **admin)[1])["last_id"]),
                "Authorization": "Basic " + base64.b64encode(("admin:" + admin["password"]).encode()).decode()})
            r = c.getresponse()
            check(r.status == 200 and "text/event-stream" in r.getheader("Content-Type", ""), "SSE: %d" % r.status)

            def reader():
                try:
                    while True:
                        line = r.readline()
                        if not line:
                            return
                        seen.append(line.decode(errors="replace").rstrip("\n"))
                except (OSError, ValueError, AttributeError):  # closed under it
                    return
            t = threading.Thread(target=reader, daemon=True)
            t.start()
            time.sleep(0.5)
            os.write(sim.fifo_fd, b'Unlink "leaf0"[4]\n')  # leaf0: 2 hosts, then spines: port 4 is spine1's
            deadline = time.time() + 30
            while not any(s == "event: link_down" for s in seen) or not any(s == "event: sweep_finished" for s in seen):
                check(time.time() < deadline, "no link_down and sweep_finished event in 30 s: %s" % seen[-20:])
                time.sleep(0.1)
            c.close()
            t.join(timeout=5)
            down = [json.loads(s[6:]) for i, s in enumerate(seen) if s.startswith("data: ") and i and
                    seen[i - 1] == "event: link_down"]
            check(any("leaf0" in json.dumps(e) for e in down), "link_down does not name leaf0: %s" % down)
            print("SSE: link_down (leaf0) and sweep_finished after Unlink")

            # /metrics, as Prometheus reads it.
            st, text, hdr = cl.call("GET", "/metrics", **admin)
            expect(st, 200, text, "metrics")
            p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
            check(p.returncode == 0, "promtool check metrics: %s %s" % (p.stdout, p.stderr))
            check(re.search(r'^weft_subnet_up 1$', text, re.M) and 'weft_nodes{type="switch"} 6' in text,
                  "metrics: " + text[:800])
            print("promtool check metrics: ok (%d lines)" % len(text.splitlines()))

            # Every GET route without path parameters.
            st, text, _ = cl.call("GET", "/api/v1/openapi.json", **admin)
            n = 0
            for path, ops in json.loads(text)["paths"].items():
                if "get" not in ops or "{" in path or path == "/api/v1/events":
                    continue
                st, body, _ = cl.call("GET", path, **admin)
                check(st < 500 and st != 404, "GET %s: %d %s" % (path, st, body[:200]))
                n += 1
            print("%d GET routes answer" % n)
            d.proc.send_signal(signal.SIGTERM)
            check(d.proc.wait(timeout=15) == 0, "weft exited non-zero on SIGTERM")
        finally:
            d.stop()
    print("PASS rest")


if __name__ == "__main__":
    b.run_main(main, (subprocess.CalledProcessError,))
