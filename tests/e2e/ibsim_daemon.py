#!/usr/bin/env python3
"""The long-running SM on ibsim: `weft sm` (no --once) must bring the fabric
up, answer SMInfo so `sminfo` finds it as master, re-sweep when a link fails
(ibsim sends trap 128 on `Unlink`) and route around it, and stop cleanly on
SIGTERM. Everything started is stopped by PID, also on failure."""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ibsim_bringup as b  # noqa: E402


def wait_for(path, pattern, count, timeout, proc):
    deadline = time.time() + timeout
    while time.time() < deadline:
        text = open(path).read() if os.path.exists(path) else ""
        if len(re.findall(pattern, text)) >= count:
            return text
        if proc.poll() is not None:
            raise b.Failure("weft exited (%s) while waiting for %r:\n%s" % (proc.returncode, pattern, text[-2000:]))
        time.sleep(0.05)
    raise b.Failure("no %d x %r in the log after %d s" % (count, pattern, timeout))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--wipe", required=True, help="weft_smp_wipe")
    ap.add_argument("--scratch", required=True)
    a = ap.parse_args()
    work = os.path.join(a.scratch, "daemon")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    net = os.path.join(work, "ft.net")
    b.run([a.weft, "topo", "ft2:leaves=6,spines=3,hosts=2", "-o", net], work, "", preload=False)
    sock = "weft-e2e-daemon-%d" % os.getpid()
    log = os.path.join(work, "weft.log")
    with b.Ibsim(net, work, sock) as sim:
        env = dict(os.environ, IBSIM_SOCKNAME=sock, LD_PRELOAD=b.UMAD2SIM, ASAN_OPTIONS=b.ASAN_OPTIONS)
        proc = subprocess.Popen([a.weft, "sm", "--state-dir", os.path.join(work, "state"), "--log-file", log,
                                 "--sweep-interval", "1", "--rest", "off"], cwd=work, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            text = wait_for(log, r"SUBNET UP", 1, 60, proc)
            # Once up, the daemon faults in room for its next snapshot (off its loop),
            # where its freed memory stays in the heap (not in a sanitizer build, whose
            # allocator takes no mallopt): what the binary keeps, as it says itself.
            kept = json.loads(b.run([a.weft, "route", "--topology", "ft2:leaves=2,spines=1,hosts=1",
                                     "--json"], work, "", preload=False).stdout)[0]["malloc_kept"]
            reserves = "mmap_max" in kept and "trim_threshold" in kept
            if reserves:
                wait_for(log, r"SM-0060 heap: \d+ MB more faulted in", 1, 60, proc)
            guid = re.search(r"bound to \S+ port \d+ guid 0x([0-9a-f]+)", text).group(1)
            info = b.run(["sminfo"], work, sock).stdout
            m = re.search(r"sm lid (\d+) sm guid 0x([0-9a-f]+).*SMINFO_MASTER", info)
            if not m or int(m.group(2), 16) != int(guid, 16):
                raise b.Failure("sminfo does not find weft (guid %s) as master: %s" % (guid, info))
            print("sminfo: " + info.strip())

            # leaf0's ports: 2 hosts, then spines 0..2: port 3 leads to spine0.
            full = len(re.findall(r"SM-0001 sweep: discovering the subnet", text))
            os.write(sim.fifo_fd, b'Unlink "leaf0"[3]\n')
            t0 = time.time()
            text = wait_for(log, r"SUBNET UP", 2, 30, proc)
            if not re.search(r"trap 128 \(link state change\).*a sweep is due", text):
                raise b.Failure("the re-sweep was not trap-driven:\n" + text[-1500:])
            print("re-sweep after Unlink: SUBNET UP again within %.2f s" % (time.time() - t0))
            if len(re.findall(r"SM-0060 heap:", text)) != (1 if reserves else 0):
                raise b.Failure("the heap was not grown once after the first SUBNET UP (malloc keeps %s):\n%s"
                                % (kept, text[-1500:]))
            # The sweep reads the switches that trapped again (an update; a far end that
            # did not trap is read when the light sweep finds its PortStateChange), routes
            # again only what crossed the link, and no full discovery follows (a thing that
            # must not happen: the window is the light sweep that would find the far end).
            text = wait_for(log, r"SM-0007 routing: minhop: only links went away", 1, 30, proc)
            time.sleep(1.5)
            text = open(log).read()
            if not re.search(r"SM-0034 update: \d switches read again, 1 links gone, 0 links found", text):
                raise b.Failure("the re-sweep did not update the model at the trapping switches:\n" + text[-1500:])
            if not re.search(r"SM-0007 routing: minhop: only links went away .* (\d+) \(switch, LID\) entries", text):
                raise b.Failure("the re-sweep did not repair the routes:\n" + text[-1500:])
            if len(re.findall(r"SM-0001 sweep: discovering the subnet", text)) != full:
                raise b.Failure("a full discovery followed the update:\n" + text[-1500:])

            nodes, lfts, pairs, problems = b.read_routes(work, sock)
            if problems:
                raise b.Failure("after the link failure %d of %d pairs bad: %s" % (len(problems), pairs, problems[:3]))
            print("routes around the failed link: %d (switch, LID) pairs reach their LID" % pairs)

            # The link flaps: back, down, back within a second. The switches' second and
            # third traps fall within trap_holdoff: folded into one heavy sweep when the
            # hold-off ends, which finds the link up.
            ups = len(re.findall(r"SUBNET UP", open(log).read()))
            for cmd in (b'ReLink "leaf0"[3]\n', b'Unlink "leaf0"[3]\n', b'ReLink "leaf0"[3]\n'):
                os.write(sim.fifo_fd, cmd)
                time.sleep(0.05)
            text = wait_for(log, r"trapped again within trap_holdoff", 1, 10, proc)
            t1 = time.time()
            held_at = text.rfind("trapped again within trap_holdoff")
            deadline = time.time() + 10
            while time.time() < deadline and "SUBNET UP" not in open(log).read()[held_at:]:
                time.sleep(0.05)
            if "SUBNET UP" not in open(log).read()[held_at:]:
                raise b.Failure("no sweep after the held trap:\n" + open(log).read()[-2000:])
            nodes, lfts, pairs, problems = b.read_routes(work, sock)
            if problems:
                raise b.Failure("after the flaps %d of %d pairs bad: %s" % (len(problems), pairs, problems[:3]))
            spine_links = sum(1 for n in nodes.values() if n["type"] == "Switch" for p in n["ports"].values()
                              if nodes.get(p[0], {}).get("type") == "Switch")
            if spine_links != 2 * 6 * 3:
                raise b.Failure("after the flaps %d switch-switch port ends, not 36: the link is not back" % spine_links)
            print("flaps: held traps folded into a sweep %.2f s later; %d SUBNET UPs in all; %d switch-switch "
                  "port ends; %d pairs route" % (time.time() - t1, len(re.findall(r"SUBNET UP", open(log).read())) - ups,
                                                  spine_links, pairs))

            # A storm: 100 flaps (50 links down and back, 5 ms apart) across the leaves'
            # uplinks. When the traps stop, the SM must end with every linked port ACTIVE
            # and every LID reachable without a loop, at a bounded cost in sweeps.
            rng = random.Random(7)
            sweeps0 = len(re.findall(r"SM-000?(1|32) sweep", open(log).read()))
            t2 = time.time()
            for _ in range(50):
                leaf, port = rng.randrange(6), 3 + rng.randrange(3)
                os.write(sim.fifo_fd, ('Unlink "leaf%d"[%d]\n' % (leaf, port)).encode())
                time.sleep(0.005)
                os.write(sim.fifo_fd, ('ReLink "leaf%d"[%d]\n' % (leaf, port)).encode())
                time.sleep(0.005)
            storm_s = time.time() - t2
            # Quiet: no new sweep for 3 s.
            deadline = time.time() + 60
            last, last_change = -1, time.time()
            while time.time() < deadline:
                n = len(re.findall(r"SM-000?(1|32) sweep", open(log).read()))
                if n != last:
                    last, last_change = n, time.time()
                elif time.time() - last_change > 3:
                    break
                time.sleep(0.1)
            else:
                raise b.Failure("the SM never settled after the storm")
            sweeps = len(re.findall(r"SM-000?(1|32) sweep", open(log).read())) - sweeps0
            links = b.run(["iblinkinfo"], work, sock).stdout
            linked = [l for l in links.splitlines() if "==>" in l and '""' not in l]
            not_active = [l for l in linked if "Active/" not in l]
            if not linked or not_active:
                raise b.Failure("after the storm %d of %d linked ports not ACTIVE, e.g. %s" %
                                (len(not_active), len(linked), not_active[:2]))
            nodes, lfts, pairs, problems = b.read_routes(work, sock)
            if problems:
                raise b.Failure("after the storm %d of %d pairs bad: %s" % (len(problems), pairs, problems[:3]))
            if sweeps > 100:
                raise b.Failure("the storm of 100 flaps cost %d sweeps" % sweeps)
            print("storm: 100 flaps in %.2f s cost %d sweeps; then %d linked ports ACTIVE, %d pairs route" %
                  (storm_s, sweeps, len(linked), pairs))

            # A second client wipes a leaf's tables as a reboot would (LFT block 0
            # dropped, LinearFDBTop 0; no port changes, no trap): the light sweep sees
            # the LinearFDBTop it did not leave, reads that switch again, and rewrites.
            ups = len(re.findall(r"SUBNET UP", open(log).read()))
            hosts = re.findall(r'^Ca\s+\d+\s+"([^"]+)"', open(net).read(), re.M)
            w = b.run([a.wipe, "0,1"], work, sock, env={"SIM_HOST": hosts[-1]})
            t3 = time.time()
            print(w.stdout.strip())
            text = wait_for(log, r"SUBNET UP", ups + 1, 10, proc)
            if not re.search(r"SM-0032 sweep: PortStateChange or LinearFDBTop at 1 switches", text[-3000:]):
                raise b.Failure("the wiped switch was not read again:\n" + text[-2000:])
            nodes, lfts, pairs, problems = b.read_routes(work, sock)
            if problems:
                raise b.Failure("after the wipe %d of %d pairs bad: %s" % (len(problems), pairs, problems[:3]))
            print("wiped switch: rewritten within %.2f s; %d pairs route" % (time.time() - t3, pairs))

            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout=10)
            if rc != 0:
                raise b.Failure("weft exited %d on SIGTERM" % rc)
            print("SIGTERM: clean exit")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=5)
    print("PASS daemon")


if __name__ == "__main__":
    b.run_main(main)
