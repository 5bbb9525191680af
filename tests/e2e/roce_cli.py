#!/usr/bin/env python3
"""weft roce end to end: check, render, diff (every format, planted mistakes), collect (the
real dcb on a real netdev, and a host tree with dcb -j output), and apply to a real
redis-server started here on loopback (a SONiC CONFIG_DB), with a hand edit caught by the
next diff. Everything started is stopped by PID, pass or fail."""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time

failures = []
checks = []



def run(weft, args, cwd, timeout=120):
    p = subprocess.run([weft] + args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def check(name, weft, args, cwd, rc, pattern="", json_check=None):
    code, out, err = run(weft, args, cwd)
    ok = code == rc and re.search(pattern, out + err, re.S) is not None
    if ok and json_check is not None:
        try:
            ok = json_check(json.loads(out))
        except ValueError as e:
            ok = False
            err += "\n(not JSON: %s)" % e
    checks.append(name)
    print("%s %s (rc %d)" % ("ok  " if ok else "FAIL", name, code))
    if not ok:
        failures.append(name)
        print("    wanted rc %d and /%s/; got:\n%s" % (rc, pattern, (out + err)[-2000:]))
    return out


def has_finding(device, port, field, check_name=None, severity="error"):
    def f(findings):
        for x in findings:
            if set(x) < {"device", "port", "field", "expected", "observed", "severity", "check"}:
                return False
            if (x["device"], x["port"], x["severity"]) == (device, port, severity) and \
                    x["field"].startswith(field) and (check_name is None or x["check"] == check_name):
                return True
        return False
    return f


def write(path, text, mode=None):
    with open(path, "w") as f:
        f.write(text)
    if mode:
        os.chmod(path, mode)


def fake_host(root, snap):
    """A host's sysfs/configfs tree and a dcb that prints `snap`'s dcb objects as dcb -j does."""
    net = os.path.join(root, "sys/class/net/eth0")
    for side in ("roce_np", "roce_rp"):
        d = os.path.join(net, "ecn", side)
        os.makedirs(os.path.join(d, "enable"))
        for k, v in snap["ecn"][side].items():
            if k == "enable":
                for p, on in v.items():
                    write(os.path.join(d, "enable", p), "%d\n" % on)
            else:
                write(os.path.join(d, k), "%d\n" % v)
    write(os.path.join(net, "mtu"), "%d\n" % snap["mtu"])
    os.makedirs(os.path.join(net, "device/infiniband/mlx5_0"))
    ports = os.path.join(root, "config/rdma_cm/mlx5_0/ports/1")
    os.makedirs(ports)
    write(os.path.join(ports, "default_roce_tos"), "%d\n" % snap["rdma_cm"]["default_roce_tos"])
    write(os.path.join(ports, "default_roce_mode"), snap["rdma_cm"]["default_roce_mode"] + "\n")
    outputs = os.path.join(root, "dcb-outputs")
    os.makedirs(outputs)
    for obj, val in snap["dcb"].items():
        write(os.path.join(outputs, obj), json.dumps(val, separators=(",", ":")) + "\n")
    fake = os.path.join(root, "dcb")
    # dcb -j OBJECT show dev IF
    write(fake, "#!/bin/sh\nf=%s/$2\n[ -f \"$f\" ] || { echo \"Attribute read: Operation not supported\" >&2; exit 1; }\n"
          "cat \"$f\"\n" % outputs, stat.S_IRWXU)
    return fake


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def redis_cli(port, *args, db=4):
    return subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "-n", str(db)] + list(args),
                          capture_output=True, text=True, timeout=30, check=True).stdout.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--data", required=True)
    a = ap.parse_args()
    W, w = a.weft, a.scratch
    shutil.rmtree(w, ignore_errors=True)
    os.makedirs(w)
    shutil.copy(os.path.join(a.data, "roce_fabric.yaml"), os.path.join(w, "fabric.yaml"))
    F = ["--fabric", "fabric.yaml"]

    # ---- check ----
    check("clean fabric", W, ["roce", "check"] + F, w, 0, r"3 switches, 2 hosts, 8 ports, 4 links.*: 0 errors, 0 warnings")
    check("clean generated fat tree", W, ["roce", "check", "--fabric", "ft2:leaves=8,spines=4,hosts=8"], w, 0,
          r"12 switches, 64 hosts.*0 errors")
    write(os.path.join(w, "typo.yaml"), "mode: lossless\ntrsut: dscp\nets: {0: 50, 3: 50, 6: strict}\n")
    check("profile typo", W, ["roce", "check", "--profile", "typo.yaml"] + F, w, 2,
          r'typo\.yaml:2: profile: unknown key "trsut" \(did you mean "trust"\?\)')
    write(os.path.join(w, "ets90.yaml"), "# ETS shares that do not add up\nets: {0: 50, 3: 40, 6: strict}\n")
    check("profile ETS sums to 90", W, ["roce", "check", "--profile", "ets90.yaml", "--json"] + F, w, 1,
          json_check=lambda fs: any(x["device"] == "ets90.yaml:2" and x["field"] == "ets.tc-bw" and
                                    x["observed"] == "90" for x in fs))
    write(os.path.join(w, "ring.yaml"), """switches: [{name: s0}, {name: s1}, {name: s2}, {name: s3}]
hosts: [{name: h0}, {name: h1}, {name: h2}, {name: h3}]
links: [[s0:p1, s1:p2], [s1:p1, s2:p2], [s2:p1, s3:p2], [s3:p1, s0:p2],
        [s0:h, h0:eth0], [s1:h, h1:eth0], [s2:h, h2:eth0], [s3:h, h3:eth0]]
""")
    check("ring: buffer-dependency cycle", W, ["roce", "check", "--fabric", "ring.yaml", "--json"], w, 1,
          json_check=lambda fs: any(x["check"] == "deadlock" and x["severity"] == "error" and
                                    x["observed"].count("->") == 4 for x in fs))
    write(os.path.join(w, "bad-fabric.yaml"), "switches:\n  - {name: a}\nlinks:\n  - [a:p1, nobody:eth0]\n")
    check("fabric error names line", W, ["roce", "check", "--fabric", "bad-fabric.yaml"], w, 2,
          r'bad-fabric\.yaml:4: link end "nobody:eth0": no switch or host named "nobody"')

    # ---- render, then diff: empty, for every format ----
    for dev, fmt, ext in (("h1", "dcb", "sh"), ("leaf1", "sonic", "json"), ("spine1", "nvue", "nvue")):
        out = check("render %s %s" % (dev, fmt), W, ["roce", "render", "--device", dev, "--format", fmt] + F, w, 0)
        path = os.path.join(w, "%s.%s" % (dev, ext))
        write(path, out)
        check("diff rendered %s is empty" % fmt, W,
              ["roce", "diff", "--observed", os.path.basename(path), "--device", dev] + F, w, 0, r": 0 errors, 0 warnings")
    check("render a switch as dcb", W, ["roce", "render", "--device", "leaf1", "--format", "dcb"] + F, w, 2,
          r"leaf1 is a switch")

    # ---- planted mistakes in what a switch holds ----
    db = json.load(open(os.path.join(w, "leaf1.json")))
    db["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] = "3,4"
    db["WRED_PROFILE"][db["QUEUE"]["Ethernet48|3"]["wred_profile"]]["ecn"] = "ecn_none"
    db["CABLE_LENGTH"]["AZURE"]["Ethernet48"] = "5m"
    write(os.path.join(w, "leaf1-bad.json"), json.dumps(db))
    out = check("diff planted switch mistakes", W,
                ["roce", "diff", "--observed", "leaf1-bad.json", "--device", "leaf1", "--json"] + F, w, 1,
                json_check=lambda fs: all(has_finding(*x)(fs) for x in (
                    ("leaf1", "Ethernet0", "pfc_enable", "pfc"),
                    ("leaf1", "Ethernet0", "pfc", "pfc"),  # across the link to h1
                    ("leaf1", "Ethernet48", "queue[3].wred", "ecn"),
                    ("leaf1", "Ethernet48", "cable_length", "headroom"))))
    write(os.path.join(w, "truncated.json"), '{"PORT_QOS_MAP": {"Ethernet0": {"pfc_enable": "3"')
    check("truncated config_db", W, ["roce", "diff", "--observed", "truncated.json", "--device", "x"], w, 2,
          r"truncated\.json:1:\d+: not valid JSON")

    # ---- collect: the real dcb on a real netdev says no DCB; a host tree gives a snapshot ----
    check("collect lo with the real dcb", W, ["roce", "collect", "lo"], w, 1,
          r"dcb app show dev lo: .*(Operation not supported|not supported).*dcb answered nothing for lo")
    check("collect a missing interface", W, ["roce", "collect", "nosuchif0"], w, 2, r"no interface nosuchif0")
    code, script, _ = run(W, ["roce", "render", "--device", "h1", "--format", "dcb"] + F, w)
    # What `dcb -j` prints once that script ran: the render's own snapshot form, with
    # object-keyed arrays as newer iproute2 prints some of them.
    host_root = os.path.join(w, "host")
    os.makedirs(host_root)
    snap = {
        "dcb": {"app": {"dscp_prio": [[26, 3], [48, 6]]}, "apptrust": {"order": ["dscp"]},
                "pfc": {"pfc_cap": 8, "macsec_bypass": False, "delay": 3,
                        "prio_pfc": {str(i): i == 3 for i in range(8)}},
                "ets": {"willing": False, "ets_cap": 8, "cbs": False,
                        "tc_bw": [50, 0, 0, 50, 0, 0, 0, 0],
                        "tc_tsa": ["ets"] * 6 + ["strict", "ets"], "prio_tc": [0, 0, 0, 3, 0, 0, 6, 0]},
                "buffer": {"prio_buffer": [0, 0, 0, 1, 0, 0, 0, 0], "buffer_size": [0] * 8, "total_size": 0},
                "dcbx": {"host": True, "ieee": True}},
        "ecn": {"roce_np": {"enable": {str(i): int(i == 3) for i in range(8)}, "cnp_dscp": 48,
                            "cnp_802p_prio": 6, "min_time_between_cnps": 4},
                "roce_rp": {"enable": {str(i): int(i == 3) for i in range(8)}}},
        "rdma_cm": {"default_roce_tos": 106, "default_roce_mode": "RoCE v2"},
        "mtu": 9100,
    }
    for line in script.splitlines():  # the knob values the script writes
        m = re.match(r"echo (\d+) > /sys/class/net/eth0/ecn/(roce_rp|roce_np)/(\w+)$", line)
        if m:
            snap["ecn"][m.group(2)][m.group(3)] = int(m.group(1))
    fake = fake_host(host_root, snap)
    check("collect a host", W, ["roce", "collect", "eth0", "--host", "h1", "--dcb", fake,
                                "--sysfs", os.path.join(host_root, "sys"), "--configfs", os.path.join(host_root, "config"),
                                "-o", "h1-snap.json"], w, 0, r"dcb maxrate show dev eth0")
    check("diff the collected host is empty", W, ["roce", "diff", "--observed", "h1-snap.json"] + F, w, 0,
          r"1 host ports, 0 switches observed: 0 errors, 0 warnings")
    # collect --counters: ethtool -S and the RDMA device's hw_counters, twice, then the doctor.
    hwdir = os.path.join(host_root, "sys/class/infiniband/mlx5_0/ports/1/hw_counters")
    os.makedirs(hwdir)
    eth_file = os.path.join(host_root, "ethtool-out")
    fake_ethtool = os.path.join(host_root, "ethtool")
    write(fake_ethtool, "#!/bin/sh\n[ \"$1\" = -S ] && [ \"$2\" = eth0 ] || exit 1\ncat %s\n" % eth_file,
          stat.S_IRWXU)

    def take(sub, discards, seq):
        write(eth_file, "NIC statistics:\n     rx_prio3_discards: %d\n     rx_prio3_pause: 1\n"
                        "     tx_prio3_pause: 1\n" % discards)
        for k, v in (("out_of_sequence", seq), ("np_cnp_sent", 7), ("lifespan", 10)):
            write(os.path.join(hwdir, k), "%d\n" % v)
        return check("collect counters into " + sub, W,
                     ["roce", "collect", "eth0", "--host", "h1", "--dcb", fake, "--ethtool", fake_ethtool,
                      "--sysfs", os.path.join(host_root, "sys"), "--configfs", os.path.join(host_root, "config"),
                      "-o", os.devnull, "--counters", sub], w, 0)

    take("c0", 0, 5)
    take("c1", 0, 25)
    ok = open(os.path.join(w, "c1", "h1.hw_counters")).read().startswith(hwdir + "/lifespan:10\n")
    checks.append("the counters as grep -H prints them")
    print("%s the counters as grep -H prints them" % ("ok  " if ok else "FAIL"))
    if not ok:
        failures.append("the counters as grep -H prints them")
    check("doctor on collected counters", W, ["roce", "doctor", "--before", "c0", "--after", "c1", "--interval",
                                              "10", "--json"], w, 1,
          json_check=lambda j: [(f["code"], f["port"]) for f in j["findings"] if f["severity"] != "info"] ==
          [("retransmission", "mlx5_0/1")])
    write(eth_file, "garbage\n")
    check("collect refuses what ethtool printed wrong", W,
          ["roce", "collect", "eth0", "--host", "h1", "--dcb", fake, "--ethtool", fake_ethtool, "--sysfs",
           os.path.join(host_root, "sys"), "--configfs", os.path.join(host_root, "config"), "-o", os.devnull,
           "--counters", "c2"], w, 1, r"ethtool -S eth0:1: not \"name: value\"")
    s = json.load(open(os.path.join(w, "h1-snap.json")))
    s["dcb"]["apptrust"]["order"] = ["pcp"]
    s["dcb"]["pfc"]["prio_pfc"]["4"] = True
    s["ecn"]["roce_np"]["enable"]["3"] = 0
    s["dcb"]["ets"]["tc_bw"][0] = 30
    s["mtu"] = 1500
    write(os.path.join(w, "h1-bad.json"), json.dumps(s))
    check("diff planted host mistakes", W, ["roce", "diff", "--observed", "h1-bad.json", "--json"] + F, w, 1,
          json_check=lambda fs: all(has_finding(*x)(fs) for x in (
              ("h1", "eth0", "trust", "trust"), ("h1", "eth0", "pfc.prio-pfc", "pfc"),
              ("h1", "eth0", "ecn.roce_np.enable[3]", "ecn"), ("h1", "eth0", "ets.tc-bw", "ets"),
              ("h1", "eth0", "mtu", "diff", "warning"))) and
          has_finding("h1", "eth0", "pfc.prio-pfc", "apply", "warning")(fs))
    check("the literal diff of the same", W, ["roce", "diff", "--literal", "--observed", "h1-bad.json", "--json"] + F,
          w, 1, json_check=lambda fs: has_finding("h1", "eth0", "mtu", "diff")(fs) and
          has_finding("h1", "eth0", "ets.tc-tsa/tc-bw", "diff")(fs))
    old = json.load(open(os.path.join(w, "h1-snap.json")))
    del old["dcb"]["apptrust"]
    old["dcb"]["app"]["dscp_prio"] = [[26, 3, " "], [48, 6, " "]]
    write(os.path.join(w, "h1-old.json"), json.dumps(old))
    check("older iproute2 output", W, ["roce", "diff", "--observed", "h1-old.json", "--verbose"] + F, w, 0,
          r"(?s)(?=.*dcb\.apptrust missing)(?=.*info \[spelling\] h1 eth0: apptrust\.order: expected dscp, "
          r"observed - \(not reported by the device)")

    # ---- the doctor: two snapshots of counters as the hosts' tools print them ----
    def counters(root, host, eth, hw, mtime):
        os.makedirs(root, exist_ok=True)
        write(os.path.join(root, host + ".ethtool"),
              "NIC statistics:\n" + "".join("     %s: %d\n" % kv for kv in sorted(eth.items())))
        write(os.path.join(root, host + ".hw_counters"),
              "".join("/sys/class/infiniband/mlx5_0/ports/1/hw_counters/%s:%d\n" % kv
                      for kv in sorted(dict(hw, lifespan=10).items())))
        for f in os.listdir(root):
            os.utime(os.path.join(root, f), (mtime, mtime))

    eth0 = {"rx_prio3_bytes": 10, "tx_prio3_bytes": 10, "rx_prio3_packets": 1, "tx_prio3_packets": 1,
            "rx_prio3_discards": 0, "rx_prio3_pause": 0, "rx_prio3_pause_duration": 0, "tx_prio3_pause": 0,
            "tx_prio3_pause_duration": 0, "rx_vport_rdma_unicast_bytes": 10, "tx_vport_rdma_unicast_bytes": 10,
            "rx_symbol_err_phy": 0, "rx_crc_errors_phy": 0, "tx_pause_storm_warning_events": 0,
            "tx_pause_storm_error_events": 0}
    hw0 = {k: 0 for k in ["out_of_sequence", "packet_seq_err", "local_ack_timeout_err", "duplicate_request",
                          "implied_nak_seq_err", "rnr_nak_retry_err", "roce_slow_restart", "np_cnp_sent",
                          "np_ecn_marked_roce_packets", "rp_cnp_handled", "rp_cnp_ignored", "out_of_buffer"]}
    moved = dict(eth0, rx_prio3_bytes=4000000000, tx_prio3_bytes=4000000000, rx_vport_rdma_unicast_bytes=3900000000,
                 tx_vport_rdma_unicast_bytes=3900000000, rx_prio3_packets=1000000, tx_prio3_packets=1000000)
    t0 = time.time() - 100
    for host in ("h1", "h2"):
        counters(os.path.join(w, "t0"), host, eth0, hw0, t0)
        counters(os.path.join(w, "t1"), host, moved, hw0, t0 + 10)
    counters(os.path.join(w, "t1-bad"), "h2", moved, hw0, t0 + 10)
    counters(os.path.join(w, "t1-bad"), "h1", dict(moved, rx_prio3_discards=31), hw0, t0 + 10)
    check("doctor: a healthy run", W, ["roce", "doctor", "--before", "t0", "--after", "t1"], w, 0,
          r"over 10\.0 s, 0 error\(s\), 0 warning\(s\)")
    check("doctor: drops on the lossless priority", W,
          ["roce", "doctor", "--before", "t0", "--after", "t1-bad", "--json"], w, 1,
          json_check=lambda j: j["interval_s"] == 10 and [(f["code"], f["device"], f["port"], f["priority"])
                                                          for f in j["findings"]] ==
          [("lossless_drops", "h1", "mlx5_0/1", 3)] and j["findings"][0]["evidence"] == {"rx_prio3_discards": 31})
    check("doctor: snapshots swapped", W, ["roce", "doctor", "--before", "t1", "--after", "t0", "--interval", "10"],
          w, 2, r"went down .*swapped")

    # ---- apply to a real redis-server (SONiC's CONFIG_DB is database 4) ----
    port = free_port()
    rdir = os.path.join(w, "redis")
    os.makedirs(rdir)
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no", "--dir", rdir], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        # A switch's own PORT fields must survive the apply.
        redis_cli(port, "HSET", "PORT|Ethernet0", "lanes", "0,1,2,3", "alias", "etp1", "mtu", "1500")
        redis_cli(port, "HSET", "DEVICE_METADATA|localhost", "hostname", "leaf1")
        url = "redis://127.0.0.1:%d/4" % port
        check("apply to CONFIG_DB", W, ["roce", "apply", "--device", "leaf1", "--sonic", url] + F, w, 0,
              r"(?=.*applied to .*keys)(?=.*read back from .*: 0 errors, 0 warnings)")
        lanes = redis_cli(port, "HGET", "PORT|Ethernet0", "lanes")
        mtu = redis_cli(port, "HGET", "PORT|Ethernet0", "mtu")
        pfc = redis_cli(port, "HGET", "PORT_QOS_MAP|Ethernet0", "pfc_enable")
        ok = lanes == "0,1,2,3" and mtu == "9100" and pfc == "3"
        checks.append("CONFIG_DB holds what was rendered")
        print("%s CONFIG_DB holds what was rendered (lanes %s, mtu %s, pfc_enable %s)" %
              ("ok  " if ok else "FAIL", lanes, mtu, pfc))
        if not ok:
            failures.append("CONFIG_DB holds what was rendered")
        check("diff against CONFIG_DB is empty", W, ["roce", "diff", "--observed", url] + F, w, 0, r": 0 errors, 0 warnings")
        redis_cli(port, "HSET", "PORT_QOS_MAP|Ethernet48", "pfc_enable", "3,4")
        check("a hand edit shows in the next diff", W, ["roce", "diff", "--observed", url, "--json"] + F, w, 1,
              json_check=has_finding("leaf1", "Ethernet48", "pfc_enable", "pfc"))
        # A switch's side of a doctor snapshot from its COUNTERS_DB (database 2), as SONiC
        # keeps it: name maps to oids, SAI fields as strings.
        redis_cli(port, "HSET", "COUNTERS_PORT_NAME_MAP", "Ethernet0", "oid:0x1000000000002", db=2)
        redis_cli(port, "HSET", "COUNTERS_QUEUE_NAME_MAP", "Ethernet0:3", "oid:0x15000000000003", db=2)
        redis_cli(port, "HSET", "COUNTERS_QUEUE_TYPE_MAP", "oid:0x15000000000003", "SAI_QUEUE_TYPE_UNICAST", db=2)
        redis_cli(port, "HSET", "COUNTERS_PG_NAME_MAP", "Ethernet0:3", "oid:0x1a000000000003", db=2)

        def sample(sub, tx_pfc3, drops):
            redis_cli(port, "HSET", "COUNTERS:oid:0x1000000000002", "SAI_PORT_STAT_PFC_3_RX_PKTS", "0",
                      "SAI_PORT_STAT_PFC_3_TX_PKTS", str(tx_pfc3), "SAI_PORT_STAT_IF_IN_OCTETS", "9", db=2)
            redis_cli(port, "HSET", "COUNTERS:oid:0x15000000000003", "SAI_QUEUE_STAT_PACKETS", "100",
                      "SAI_QUEUE_STAT_DROPPED_PACKETS", str(drops), "PFC_WD_STATUS", "operational",
                      "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED", "0", db=2)
            redis_cli(port, "HSET", "COUNTERS:oid:0x1a000000000003",
                      "SAI_INGRESS_PRIORITY_GROUP_STAT_DROPPED_PACKETS", str(drops // 2), db=2)
            redis_cli(port, "HSET", "PERSISTENT_WATERMARKS:oid:0x1a000000000003",
                      "SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES", str(tx_pfc3 * 6), db=2)
            check("collect a switch's counters into " + sub, W,
                  ["roce", "collect", "--sonic", "redis://127.0.0.1:%d/2" % port, "--device", "leaf1",
                   "--counters", sub], w, 0)

        sample("s0", 10, 0)
        sample("s1", 510, 7)
        check("doctor on a switch's collected counters", W,
              ["roce", "doctor", "--before", "s0", "--after", "s1", "--interval", "10", "--json"], w, 1,
              json_check=lambda j: [(f["code"], f["device"], f["port"], f["priority"]) for f in j["findings"]] ==
              [("lossless_drops", "leaf1", "Ethernet0", 3)] * 2 and j["pauses"][0]["frames"] == 500 and
              [f["evidence"].get("headroom_watermark_bytes") for f in j["findings"]] == [None, 3060])
        check("collect from a database that is not COUNTERS_DB", W,
              ["roce", "collect", "--sonic", url, "--device", "leaf1", "--counters", "s2"], w, 1,
              r"no COUNTERS_PORT_NAME_MAP")
        check("apply to a closed port", W, ["roce", "apply", "--device", "leaf1", "--sonic",
                                            "redis://127.0.0.1:%d/4" % free_port()] + F, w, 1, r"Connection refused")
    finally:
        if redis.poll() is None:
            redis.send_signal(signal.SIGTERM)
            try:
                redis.wait(timeout=10)
            except subprocess.TimeoutExpired:
                redis.kill()
                redis.wait()

    print("%d checks, %d failed" % (len(checks), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
