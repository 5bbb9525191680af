#!/usr/bin/env python3
"""Congestion control on ibsim (issue 31, item 3): ibsim has no CC agent and answers
class 0x21 from its SMP handlers (a CACongestionSetting Set would land in the P_Key
table handler). With congestion_control TRUE and OpenSM-style settings, weft brings the
fabric up, asks each device CongestionInfo once, finds no real answer, writes nothing:
every CA's P_Key table read by smpquery is the same as after a run with CC off, the log
says why once per device kind, and the pass sends one MAD per device. A second run sends
one again (a new process knows nothing), never a Set. Then the daemon with REST and
cc_log_interval_s 1: GET /api/v1/congestion says every device is without CC, reads of
the logs happen (on no device: nothing is configured) and name no port, and the P_Key
tables are still as before.

Everything started is stopped by PID, also on failure."""
import argparse
import os
import re
import json
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ibsim_bringup as b  # noqa: E402
from ibsim_rest import Client, Daemon, admin_password, free_port  # noqa: E402

SPEC = "ft2:leaves=3,spines=2,hosts=2"  # 5 switches, 6 CAs
CC_CONF = """congestion_control TRUE
cc_sw_cong_setting_control_map 0x0000000F
cc_sw_cong_setting_victim_mask 0x00000000000000000000000000000000000000000000000000000001fffffffe
cc_sw_cong_setting_threshold 0xf
cc_sw_cong_setting_packet_size 1
cc_sw_cong_setting_marking_rate 0x000f
cc_ca_cong_setting_port_control 0x0001
cc_ca_cong_setting_control_map 0x0001
cc_ca_cong_setting_ccti_timer 0 10
cc_ca_cong_setting_ccti_increase 0 1
cc_ca_cong_setting_trigger_threshold 0 2
cc_ca_cong_setting_ccti_min 0 0
cc_cct 0:0,0:1,0:2,0:3
"""


def ca_lids(work, sock):
    """Every CA port's LID, as ibnetdiscover reads them."""
    nodes = b.parse_ibnetdiscover(b.run(["ibnetdiscover"], work, sock).stdout)
    return sorted(p[2] for n in nodes.values() if n["type"] != "Switch" for p in n["ports"].values())


def pkey_tables(work, sock, lids):
    out = {}
    for lid in lids:
        p = b.run(["smpquery", "pkeys", str(lid)], work, sock)
        out[lid] = p.stdout.strip()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--scratch", required=True)
    a = ap.parse_args()
    work = os.path.join(a.scratch, "cc")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    net = os.path.join(work, "ft2.net")
    b.run([a.weft, "topo", SPEC, "-o", net], work, "", preload=False)
    want_sw, want_ca = b.expected_nodes(net)
    conf = os.path.join(work, "cc.conf")
    open(conf, "w").write(CC_CONF)
    state = os.path.join(work, "state")
    sock = "weft-e2e-cc-%d" % os.getpid()
    with b.Ibsim(net, work, sock):
        plain = b.run([a.weft, "sm", "--once", "--state-dir", state], work, sock)
        if "SUBNET UP" not in plain.stderr:
            raise b.Failure("no SUBNET UP with CC off")
        lids = ca_lids(work, sock)
        if len(lids) != want_ca:
            raise b.Failure("%d CA ports found, %d expected" % (len(lids), want_ca))
        before = pkey_tables(work, sock, lids)
        for run_no in (1, 2):
            cc = b.run([a.weft, "sm", "--once", "--state-dir", state, "--config", conf], work, sock)
            log = cc.stderr
            if "SUBNET UP" not in log:
                raise b.Failure("run %d: no SUBNET UP with CC on" % run_no)
            m = re.search(r"CC-0004 congestion control: (\d+) of (\d+) devices configured, (\d+) without CC, "
                          r"(\d+) locked by another CC_Key, (\d+) failed; (\d+) MADs \((\d+) Sets\)", log)
            if not m:
                raise b.Failure("run %d: no CC-0004 summary:\n%s" % (run_no, log[-3000:]))
            configured, devices, without, locked, failed, mads, sets = map(int, m.groups())
            if devices != want_sw + want_ca or configured or without != devices or locked or failed:
                raise b.Failure("run %d: %s" % (run_no, m.group(0)))
            if mads != devices or sets:
                raise b.Failure("run %d: %d CC MADs (%d Sets) for %d devices: one Get each, no Set"
                                % (run_no, mads, sets, devices))
            said = re.findall(r"CC-0001 .*no congestion control \((.*)\); never written", log)
            if not said or len(said) > 2:  # one CA kind, one switch kind
                raise b.Failure("run %d: CC-0001 said %d times, not once per device kind" % (run_no, len(said)))
            if not any("is no CongestionInfo" in w or "no reply" in w for w in said):
                raise b.Failure("run %d: CC-0001 does not say why: %s" % (run_no, said))
            after = pkey_tables(work, sock, lids)
            changed = [lid for lid in lids if after[lid] != before[lid]]
            if changed:
                raise b.Failure("run %d: P_Key tables of LIDs %s changed:\n%s\n---\n%s"
                                % (run_no, changed, before[changed[0]], after[changed[0]]))
            print("run %d: %s; CC-0001 %s; %d CA P_Key tables as before" % (run_no, m.group(0), said, len(lids)))
        daemon_run(a, work, sock, state, conf, want_sw + want_ca)
        after = pkey_tables(work, sock, lids)
        changed = [lid for lid in lids if after[lid] != before[lid]]
        if changed:
            raise b.Failure("daemon: P_Key tables of LIDs %s changed" % changed)
    print("PASS congestion control on ibsim")


def daemon_run(a, work, sock, state, conf, devices):
    """weft sm with REST, the logs read each second: /api/v1/congestion."""
    dconf = os.path.join(work, "cc-daemon.conf")
    open(dconf, "w").write(CC_CONF + "cc_log_interval_s 1\n")
    port = free_port()
    d = Daemon(a.weft, work, sock, state, os.path.join(work, "daemon.log"), port, ["--config", dconf])
    try:
        d.start()
        cl = Client(port)
        admin = {"user": "admin", "password": admin_password(state)}
        deadline = time.monotonic() + 120
        j = None
        while time.monotonic() < deadline:
            st, text, _ = cl.call("GET", "/api/v1/congestion", **admin)
            if st != 200:
                raise b.Failure("GET /api/v1/congestion: %d %s" % (st, text[:300]))
            j = json.loads(text)
            if j["log_reads"] >= 2:
                break
            time.sleep(0.5)
        if not j or j["log_reads"] < 2:
            raise b.Failure("the logs were not read twice: %s" % j)
        dev = j["devices"]
        if not j["congestion_control"] or dev["unavailable"] != devices or dev["configured"]:
            raise b.Failure("daemon: devices %s, %d expected without CC" % (dev, devices))
        print("daemon: %d log reads (to no device), devices %s" % (j["log_reads"], dev))
    finally:
        d.stop()


if __name__ == "__main__":
    b.run_main(main)
