#!/usr/bin/env python3
"""Two SMs on one host, as weft@.service runs them: two `weft sm` daemons at once, each
on its own ibsim fabric with its own state directory and log, both bring their fabric
up and keep to their own guid2lid. Both are given one REST address (a shared weft.conf's
rest_listen) that something else holds: neither stops serving its fabric; both say so and
try again, and once the address is free exactly one of them serves REST there. A third weft pointed at a state directory in use
refuses at once, naming the holder's pid, and leaves that directory's guid2lid as it
was. The lock goes with its holder: after SIGTERM, and after kill -9, a new weft takes
the directory. Everything started is stopped by PID, also on failure."""
import argparse
import os
import re
import shutil
import signal
import socket
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ibsim_bringup as b  # noqa: E402

# Two fabrics with GUIDs of their own: a generated tree, and ibsim's own example.
FABRICS = {"a": "ft2:leaves=4,spines=2,hosts=2", "b": "ibsim_example.net"}


def fabric_port_guids(work, sock):
    """The LID-holding port GUIDs ibnetdiscover reads: switch port 0s and CA ports."""
    out = set()
    for guid, n in b.parse_ibnetdiscover(b.run(["ibnetdiscover"], work, sock).stdout).items():
        out |= {guid} if n["type"] == "Switch" else set(n["port_guids"].values())
    return out


def port_guids(guid2lid):
    return {int(line.split()[0], 16) for line in open(guid2lid) if line.strip()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--data", required=True)
    a = ap.parse_args()
    work = os.path.join(a.scratch, "instances")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    nets, socks, states, logs = {}, {}, {}, {}
    for k, spec in FABRICS.items():
        nets[k] = os.path.join(work, k + ".net")
        if spec.endswith(".net"):
            shutil.copy(os.path.join(a.data, spec), nets[k])
        else:
            b.run([a.weft, "topo", spec, "-o", nets[k]], work, "", preload=False)
        socks[k] = "weft-e2e-inst-%s-%d" % (k, os.getpid())
        states[k] = os.path.join(work, "state-" + k)
        logs[k] = os.path.join(work, "weft-%s.log" % k)

    # The REST address both instances are given, held by this test until they are up.
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    rest = "127.0.0.1:%d" % holder.getsockname()[1]

    def daemon(k):
        return b.Background([a.weft, "sm", "--state-dir", states[k], "--log-file", logs[k], "--sweep-interval", "1",
                             "--rest", rest],
                            work, socks[k], logs[k])

    def rest_answers():
        try:
            urllib.request.urlopen("http://%s/api/v1/sm" % rest, timeout=5)
            return True
        except urllib.error.HTTPError:
            return True  # 401: a weft answered
        except (urllib.error.URLError, OSError):
            return False

    with b.Ibsim(nets["a"], work, socks["a"]), b.Ibsim(nets["b"], work, socks["b"]):
        with daemon("a") as da, daemon("b") as db:
            # The REST address was taken: each SM runs on, and says so.
            for k in ("a", "b"):
                if "REST-0014" not in open(logs[k]).read():
                    raise b.Failure("weft %s: no REST-0014 (REST could not listen) in its log" % k)
            holder.close()
            deadline = time.time() + 60
            while time.time() < deadline and not rest_answers():
                time.sleep(0.2)
            if not rest_answers():
                raise b.Failure("nothing serves REST on %s 60 s after it was freed" % rest)
            serving = [k for k in ("a", "b") if "REST API on http://%s" % rest in open(logs[k]).read()]
            if len(serving) != 1:
                raise b.Failure("%d instances say they serve REST on %s (want 1)" % (len(serving), rest))
            for k, d in (("a", da), ("b", db)):
                if d.proc.poll() is not None:
                    raise b.Failure("weft %s exited %d" % (k, d.proc.returncode))
            print("REST address held: both SMs ran on (REST-0014); freed, weft %s serves it" % serving[0])
            for k, d in (("a", da), ("b", db)):
                info = b.run(["sminfo"], work, socks[k]).stdout
                if "SMINFO_MASTER" not in info:
                    raise b.Failure("fabric %s: sminfo finds no master: %s" % (k, info))
                held = port_guids(os.path.join(states[k], "guid2lid"))
                own = fabric_port_guids(work, socks[k])
                if not held or held != own:
                    raise b.Failure("state-%s/guid2lid holds %d ports; its fabric has %d, %d of them not in the file"
                                    % (k, len(held), len(own), len(own - held)))
                if open(os.path.join(states[k], "lock")).read().strip() != str(d.proc.pid):
                    raise b.Failure("state-%s/lock does not name pid %d" % (k, d.proc.pid))
            held_a = port_guids(os.path.join(states["a"], "guid2lid"))
            held_b = port_guids(os.path.join(states["b"], "guid2lid"))
            if held_a & held_b:
                raise b.Failure("the two guid2lid files share %d ports" % len(held_a & held_b))
            print("two daemons: each fabric has its master; guid2lid a %d ports, b %d ports, each its own "
                  "fabric's, no overlap" % (len(held_a), len(held_b)))
            if open(logs["a"]).read().count("SUBNET UP") < 1 or "SUBNET UP" not in open(logs["b"]).read():
                raise b.Failure("a log misses its own SUBNET UP")

            # A third SM, on fabric b, pointed at a's state directory.
            before = open(os.path.join(states["a"], "guid2lid"), "rb").read()
            t0 = time.time()
            p = b.run([a.weft, "sm", "--once", "--state-dir", states["a"], "--log-file", os.path.join(work, "third.log")],
                      work, socks["b"], timeout=30, check=False)
            want = "state directory %s is in use by another weft (pid %d)" % (states["a"], da.proc.pid)
            if p.returncode == 0 or want not in p.stderr:
                raise b.Failure("a third weft on a state directory in use: exit %d, stderr %r"
                                % (p.returncode, p.stderr[-500:]))
            if open(os.path.join(states["a"], "guid2lid"), "rb").read() != before:
                raise b.Failure("the refused weft changed state-a/guid2lid")
            print("third weft on state-a refused in %.2f s: %s" % (time.time() - t0, p.stderr.strip()))

            da.proc.send_signal(signal.SIGTERM)
            da.proc.wait(timeout=10)
            db.proc.kill()  # kill -9: the kernel drops the lock with the process
            db.proc.wait(timeout=10)
        for k in ("a", "b"):
            p = b.run([a.weft, "sm", "--once", "--state-dir", states[k], "--log-file", os.path.join(work, "again-%s.log" % k)],
                      work, socks[k], timeout=60, check=False)
            if p.returncode != 0:
                raise b.Failure("after its holder %s, a new weft could not take state-%s: %s"
                                % ("stopped" if k == "a" else "was killed", k, p.stderr[-500:]))
        print("after SIGTERM (a) and kill -9 (b): a new weft takes each state directory")
        weft_at_units(a, work, socks)
    print("PASS instances")


def weft_at_units(a, work, socks):
    """Two instances as weft@PORTGUID starts them: one shared config (its rest_listen a
    free port), --guid, /var/lib/weft/PORTGUID-style state directories side by side, no
    --rest. Both serve REST, each on its own port, each claimed in its state directory;
    restarted, an instance gets its claimed port again."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.bind(("127.0.0.1", 0))
    base = probe.getsockname()[1]
    probe.close()
    shared = os.path.join(work, "weft.conf")
    with open(shared, "w") as f:
        f.write("rest_listen 127.0.0.1:%d\nsweep_interval 1\n" % base)
    lib = os.path.join(work, "var-lib-weft")
    guids, states = {}, {}
    for k in ("a", "b"):
        guids[k] = b.run(["ibstat", "-p"], work, socks[k]).stdout.split()[0]
        states[k] = os.path.join(lib, guids[k])

    def unit(k, run):
        log = os.path.join(work, "unit-%s-%d.log" % (k, run))
        return b.Background([a.weft, "sm", "--config", shared, "--guid", guids[k], "--state-dir", states[k],
                             "--log-file", log], work, socks[k], log, ready="SUBNET UP")

    def claim(k):
        return open(os.path.join(states[k], "rest-listen")).read().strip()

    def answers(listen, wait_s=60):
        """Whether a weft answers REST there within `wait_s` (a port just freed may take a
        retry or two to bind again)."""
        deadline = time.time() + wait_s
        while True:
            try:
                urllib.request.urlopen("http://%s/api/v1/sm" % listen, timeout=5)
                return True
            except urllib.error.HTTPError as e:
                return e.code == 401  # a weft, asking who
            except (urllib.error.URLError, OSError):
                if time.time() > deadline:
                    return False
                time.sleep(0.2)

    with unit("a", 1) as ua:
        with unit("b", 1):
            for k in ("a", "b"):
                deadline = time.time() + 60
                while time.time() < deadline and not os.path.exists(os.path.join(states[k], "rest-listen")):
                    time.sleep(0.1)
            claims = {k: claim(k) for k in ("a", "b")}
            if claims["a"] == claims["b"]:
                raise b.Failure("both instances claim %s" % claims["a"])
            for k in ("a", "b"):
                port = int(claims[k].rsplit(":", 1)[1])
                if not base <= port < base + 64:
                    raise b.Failure("instance %s claims %s, not a port from %d up" % (k, claims[k], base))
                if not answers(claims[k]):
                    raise b.Failure("instance %s does not answer REST on its claim %s" % (k, claims[k]))
                if "REST-0014" in open(os.path.join(work, "unit-%s-1.log" % k)).read():
                    raise b.Failure("instance %s could not listen (REST-0014)" % k)
            if claims["a"] != "127.0.0.1:%d" % base:
                raise b.Failure("the first instance took %s, not rest_listen's %d" % (claims["a"], base))
        ua.proc.send_signal(signal.SIGTERM)
        ua.proc.wait(timeout=10)
    # Both stopped. b forgets its claim and starts first, while a (which claimed
    # rest_listen's own port) is down: b must not take a's claimed port. Then a starts
    # and serves on its claim again.
    os.unlink(os.path.join(states["b"], "rest-listen"))
    with unit("b", 2):
        with unit("a", 2):
            for k in ("a", "b"):
                deadline = time.time() + 60
                while time.time() < deadline and not os.path.exists(os.path.join(states[k], "rest-listen")):
                    time.sleep(0.1)
            if claim("a") != claims["a"]:
                raise b.Failure("restarted, a's claim moved: %s, was %s" % (claim("a"), claims["a"]))
            if claim("b") == claims["a"]:
                raise b.Failure("b, started first without a claim, took a's claimed %s" % claims["a"])
            for k in ("a", "b"):
                log = os.path.join(work, "unit-%s-2.log" % k)
                deadline = time.time() + 60
                while time.time() < deadline and "REST API on http://%s " % claim(k) not in open(log).read():
                    time.sleep(0.2)
                if "REST API on http://%s " % claim(k) not in open(log).read():
                    raise b.Failure("restarted, instance %s does not serve on its claim %s" % (k, claim(k)))
    print("weft@ instances on one shared config: REST on %s and %s, each claimed in its state "
          "directory; restarted with b first and its claim gone, b skips a's claim (now %s) and a "
          "serves on its own" % (claims["a"], claims["b"], claim("b")))


if __name__ == "__main__":
    b.run_main(main)
