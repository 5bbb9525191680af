#!/usr/bin/env python3
"""MAD loss on ibsim: `Error` drops of 1 %, 5 % and 10 %, at the SM's port and at
every port of the fabric. `weft sm` must still bring the subnet up with correct tables
(read back with dump_fts once the drops are cleared), within 3x the loss-free time
plus the retry timeouts: each retried MAD's transaction_timeout, and the backoff
before a sweep that ended with failures is tried again (1 s, then 2 s, ...). A state
change whose reply was lost, the case that used to fail (the resend is refused: the
port already moved), is read back and carried on. Everything started is stopped by
PID, also on failure."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ibsim_bringup as b  # noqa: E402

TOPO = "ft2:leaves=6,spines=3,hosts=3"  # 9 switches, 18 CAs
TIMEOUT_MS = 100
# At 10 % loss on every port a reply over 4 hops crosses ~10 lossy ports: 1 in 3 attempts
# gets through, so a lossy fabric wants more attempts than the default 3.
RETRIES = 20


def nodes_of(net):
    return re.findall(r'^(?:Switch|Ca|Hca)\s+\d+\s+"([^"]+)"', open(net).read(), re.M)


def run_until_up(a, work, sock):
    """The daemon until its first SUBNET UP: (seconds, MADs retried, sweeps that failed)."""
    log = os.path.join(work, "weft.log")
    env = dict(os.environ, IBSIM_SOCKNAME=sock, LD_PRELOAD=b.UMAD2SIM, ASAN_OPTIONS=b.ASAN_OPTIONS)
    t0 = time.time()
    proc = subprocess.Popen([a.weft, "sm", "--rest", "off", "--state-dir", os.path.join(work, "state"),
                             "--timeout", str(TIMEOUT_MS), "--retries", str(RETRIES), "--log-file", log], cwd=work, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        deadline = t0 + 120
        while time.time() < deadline:
            text = open(log, errors="replace").read() if os.path.exists(log) else ""
            if "SUBNET UP" in text:
                break
            if proc.poll() is not None:
                raise b.Failure("weft exited %d:\n%s" % (proc.returncode, text[-3000:]))
            time.sleep(0.01)
        took = time.time() - t0
        text = open(log, errors="replace").read()
        if "SUBNET UP" not in text:
            raise b.Failure("no SUBNET UP in 120 s:\n" + text[-3000:])
    finally:
        b.stop_process(proc)
    out = proc.stdout.read()
    retried = sum(int(x) for x in re.findall(r"MADs\s+(\d+) retried", out))
    failed = len(re.findall(r"subnet NOT up", text.split("SUBNET UP")[0]))
    return took, retried, failed


def one(a, net, scope, rate, base):
    work = os.path.join(a.scratch, "loss-%s-%d" % (scope, rate))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    shutil.copy(net, os.path.join(work, "ft.net"))
    sock = "weft-e2e-loss-%d-%s-%d" % (os.getpid(), scope, rate)
    names = nodes_of(net)
    with b.Ibsim(os.path.join(work, "ft.net"), work, sock) as sim:
        targets = [names[0]] if scope == "sm-port" else names
        if rate:
            for n in targets:
                os.write(sim.fifo_fd, ('Error "%s" %d\n' % (n, rate)).encode())
            time.sleep(0.3)
        try:
            took, retried, failed = run_until_up(a, work, sock)
        except b.Failure as e:
            raise b.Failure("%s %d %%: %s" % (scope, rate, e))
        for n in targets:
            os.write(sim.fifo_fd, ('Error "%s" 0\n' % n).encode())
        time.sleep(0.3)
        nodes, lfts, pairs, problems = b.read_routes(work, sock)
        if problems:
            raise b.Failure("%s %d %%: %d of %d pairs bad: %s" % (scope, rate, len(problems), pairs, problems[:3]))
        # Loss at the SM's port alone leaves every MAD 21 attempts at >= 80 % each: a
        # sweep fails there only when a lost reply is counted as a failure.
        if scope == "sm-port" and failed:
            raise b.Failure("sm-port %d %%: %d sweeps ended with failures before SUBNET UP" % (rate, failed))
        if base is not None:
            backoff = sum(2 ** k for k in range(failed))  # 1 s, 2 s, 4 s ...
            allowed = 3 * base + retried * TIMEOUT_MS / 1000.0 + backoff
            if took > allowed:
                raise b.Failure("%s %d %%: %.2f s, over 3 x %.2f s + %d retries x %d ms + %d s of backoff = %.2f s" %
                                (scope, rate, took, base, retried, TIMEOUT_MS, backoff, allowed))
        print("%-10s %3d %% loss: SUBNET UP in %.2f s, %d MADs retried, %d sweeps retried, %d (switch, LID) pairs route"
              % (scope, rate, took, retried, failed, pairs))
        return took


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--scratch", required=True)
    a = ap.parse_args()
    os.makedirs(a.scratch, exist_ok=True)
    net = os.path.join(a.scratch, "loss.net")
    b.run([a.weft, "topo", TOPO, "-o", net], a.scratch, "", preload=False)
    base = one(a, net, "none", 0, None)
    for scope in ("sm-port", "every-port"):
        for rate in (1, 5, 10):
            one(a, net, scope, rate, base)
    print("PASS loss")


if __name__ == "__main__":
    try:
        main()
    except (b.Failure, subprocess.TimeoutExpired) as e:
        print("FAIL: %s" % e, file=sys.stderr)
        sys.exit(1)
