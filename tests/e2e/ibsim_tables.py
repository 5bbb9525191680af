#!/usr/bin/env python3
"""Partitions and QoS on ibsim, refereed by infiniband-diags.

Brings a small fat tree up once without a config (to learn the CA port GUIDs
with ibnetdiscover), then restarts `weft sm --once --config` with an
opensm.conf (comments, odd spacing, OpenSM options weft lacks) naming a
partitions.conf, QoS on, and checks what `smpquery pkeys`, `smpquery sl2vl`,
`smpquery vlarb` and `smpquery portinfo` read back from the ports:
  - the SM's port: a full Default member only; a full and a limited member of
    a partition; a port in no partition: a limited Default member;
  - every CA's SL2VL is qos_ca_sl2vl (VLs masked to the port's 8 VLs), every
    switch's (in, out) table toward a linked port is qos_swe_sl2vl;
  - VL arbitration and VLHighLimit as configured;
  - HOQLife on switch ports (facing switches, facing CAs) and SwitchInfo
    LifeTime as configured (`smpquery portinfo`, `smpquery switchinfo`);
  - the OpenSM option set away from its default is reported with file:line;
  - a restart writes no P_Key, SL2VL or VLArb table again;
  - a flood of 20,000 PathRecord queries, a quarter of them garbage, leaves
    no valid query unanswered and the SA still answering;
  - dfsssp on a torus: saquery's PathRecords carry the layer SLs, all below
    the VLs the routes need, and switches map SL i to VL i (smpquery sl2vl);
  - updn on a 4-ary 3-tree with 4 inter-switch links cut: 2 VLs, every switch
    reaches every LID (dump_fts), a few hosts' paths toward the cut switches on
    SL 1 and none above (saquery), SL i on VL i (smpquery sl2vl);
  - multicast joins (weft_sa_client, from hosts chosen with SIM_HOST) and a
    leave, read back with `ibroute -M`: packets reach the receivers, no one else;
  - kill -9 of the SM and a restart on its state directory: the multicast groups
    are read back, `ibroute -M` reads the MFTs unchanged, saquery finds the
    member at the same MLID;
  - with weft running as the SM, saquery answers NodeRecord, PortInfoRecord and
    PathRecords (a P_Key only between ports that share it, none between two
    limited members), `saquery -s` and `sminfo` find weft as master;
  - `weft config check` passes the real `opensm -c` output and refuses a
    broken file with file:line.
ibsim's switches report no P_Key enforcement capability, so enforcement is
checked in the in-process simulator (tests/simulator/tables_test.cpp).
Everything started is stopped by PID, also on failure.
"""
import argparse
import ipaddress
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ibsim_bringup import (Background, Failure, Ibsim, degrade_net,  # noqa: E402
                           parse_ibnetdiscover, read_routes, run, run_main, sa_query)

CA_SL2VL = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 15]
SWE_SL2VL = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]


def pkeys(out):
    keys = []
    for line in out.splitlines():
        m = re.match(r"^\s*\d+:\s+(.*)$", line)
        if m:
            keys += [int(x, 16) for x in m.group(1).split()]
    return [k for k in keys if k & 0x7fff]


def sl2vl_rows(out):
    """{(in, out): [16 VLs]}"""
    rows = {}
    for line in out.splitlines():
        m = re.match(r"^ports: in\s+(\d+), out\s+(\d+):\s*\|(.*)\|\s*$", line)
        if m:
            rows[(int(m.group(1)), int(m.group(2)))] = [int(x) for x in m.group(3).split("|")]
    return rows


def vlarb(out):
    """{'low': [(vl, weight)], 'high': [...]}"""
    tables, cur, vls = {}, None, None
    for line in out.splitlines():
        if line.startswith("# Low"):
            cur = "low"
        elif line.startswith("# High"):
            cur = "high"
        elif line.startswith("VL ") and cur:
            vls = [int(x, 16) for x in line.split(":", 1)[1].strip(" |").split("|")]
        elif line.startswith("WEIGHT") and cur and vls is not None:
            ws = [int(x, 16) for x in line.split(":", 1)[1].strip(" |").split("|")]
            tables[cur] = list(zip(vls, ws))
    return tables


def records(out, kind):
    return out.count(kind + " dump")


def field(out, name):
    m = re.search(r"\b" + name + r"\.+\s*(\S+)", out)
    return m.group(1) if m else None


def sa_checks(work, sock, sm_lid, full, limited, outside):
    def sq(*args):
        return run(["saquery"] + [str(x) for x in args], work, sock, check=False).stdout

    nr = sq("NR", full[1])
    if records(nr, "NodeRecord") != 1 or int(field(nr, "port_guid"), 16) != full[0]:
        raise Failure("saquery NR %d:\n%s" % (full[1], nr))
    pir = sq("PIR", limited[1])
    if records(pir, "PortInfoRecord") != 1 or field(pir, "EndPortLid") != str(limited[1]):
        raise Failure("saquery PIR %d:\n%s" % (limited[1], pir))
    pr = sq("--src-to-dst", "%d:%d" % (full[1], limited[1]))
    if records(pr, "PathRecord") != 1 or field(pr, "pkey") != "0x8002" or field(pr, "dlid") != str(limited[1]):
        raise Failure("saquery --src-to-dst full:limited:\n" + pr)
    if field(pr, "mtu") != "0x84" or field(pr, "rate") != "0x83":
        raise Failure("path MTU/rate not 2048 / 10 Gb/s exactly:\n" + pr)
    if records(sq("--pkey", "0x8002", "--src-to-dst", "%d:%d" % (full[1], limited[1])), "PathRecord") != 1:
        raise Failure("no path on P_Key 0x8002 between its full and its limited member")
    if records(sq("--pkey", "0x8002", "--src-to-dst", "%d:%d" % (sm_lid, outside[1])), "PathRecord") != 0:
        raise Failure("a path on P_Key 0x8002 between ports that do not share it")
    if records(sq("--src-to-dst", "%d:%d" % (limited[1], outside[1])), "PathRecord") != 0:
        raise Failure("a path between two limited members of every partition they hold")
    pr_sm = sq("--src-to-dst", "%d:%d" % (sm_lid, outside[1]))
    if records(pr_sm, "PathRecord") != 1 or field(pr_sm, "pkey") != "0xFFFF":
        raise Failure("the SM's port reaches every port through Default:\n" + pr_sm)
    sms = sq("-s").split("IsSMdisabled")[0]
    if records(sms, "PortInfoRecord") != 1 or not re.search(r"EndPortLid\.+%d\b" % sm_lid, sms):
        raise Failure("saquery -s does not find exactly the SM's port:\n" + sms)
    smi = run(["sminfo"], work, sock).stdout
    if "SMINFO_MASTER" not in smi or "sm lid %d" % sm_lid not in smi:
        raise Failure("sminfo: " + smi)
    print("SA: NR, PIR, PathRecords (P_Key 0x8002 between its members, none without a shared "
          "partition, 2048/10 Gb/s), saquery -s and sminfo find weft as master")


def mfts(work, sock, switches):
    """{switch guid: {mlid: set(ports)}} from `ibroute -M`."""
    out = {}
    for guid, sw in switches.items():
        text = run(["ibroute", "-M", str(sw["lid"])], work, sock, check=False).stdout
        cols, table = {}, {}
        for line in text.splitlines():
            if line.strip().startswith("Ports:"):
                for m in re.finditer(r"\d+", line[line.index("Ports:") + 6:]):
                    cols[line.index("Ports:") + 6 + m.start() + len(m.group(0)) - 1] = int(m.group(0))
            m = re.match(r"^(0x[0-9a-f]+)\s", line)
            if m and cols:
                table[int(m.group(1), 16)] = {p for c, p in cols.items() if c < len(line) and line[c] == "x"}
        out[guid] = table
    return out


def deliveries(nodes, tables, mlid, src_guid):
    """End ports a packet to `mlid` from CA `src_guid` reaches through the MFTs read back."""
    src = nodes[src_guid]
    peer, pport, _ = src["ports"][1]
    got, todo, seen = set(), [(peer, pport)], set()
    while todo:
        sw, inp = todo.pop()
        if sw in seen:
            continue
        seen.add(sw)
        for p in tables.get(sw, {}).get(mlid, set()):
            if p == inp or p == 0 or p not in nodes[sw]["ports"]:
                continue
            nxt, nport, _ = nodes[sw]["ports"][p]
            if nodes[nxt]["type"] == "Switch":
                todo.append((nxt, nport))
            elif nxt != src_guid:
                got.add(nxt)
    return got


def multicast_checks(client, work, sock, nodes):
    """Joins to the Default partition's IPoIB broadcast group from three hosts on two
    leaves (one send-only), read back with ibroute -M: the trees reach the receivers
    and no other port; a leave prunes."""
    bcast = "ff12:401b:ffff::ffff:ffff"
    names = {"h0-1": None, "h1-0": None, "h1-2": None, "h0-2": None}
    for g, n in nodes.items():
        if n["type"] != "Switch" and n.get("name") in names:
            names[n["name"]] = g
    if None in names.values():
        raise Failure("hosts not found by name: %s" % names)

    def join(host, op="join", state="full"):
        r = run([client, op, bcast, state], work, sock, timeout=30, check=False, env={"SIM_HOST": host})
        if r.returncode != 0 or "status 0x0000 mlid 0xc000" not in r.stdout:
            raise Failure("%s %s from %s: rc %d %s %s" % (op, bcast, host, r.returncode, r.stdout, r.stderr[-300:]))

    for h in ("h0-1", "h1-0", "h1-2"):
        join(h)
    join("h0-2", state="sendonly")
    switches = {g: n for g, n in nodes.items() if n["type"] == "Switch"}

    def wrong_deliveries(receivers, senders):
        tables = mfts(work, sock, switches)
        for h in senders:
            got = deliveries(nodes, tables, 0xC000, names[h])
            want = {names[r] for r in receivers} - {names[h]}
            if got != want:
                return "a packet to 0xC000 from %s reaches %s, want %s (MFTs %s)" % (
                    h, sorted(map(hex, got)), sorted(map(hex, want)), tables)
        return None

    def settled(receivers, senders):
        """The SM programs the MFTs after it answers a join or leave: wait for the state."""
        deadline = time.time() + 30
        wrong = wrong_deliveries(receivers, senders)
        while wrong and time.time() < deadline:
            time.sleep(0.2)
            wrong = wrong_deliveries(receivers, senders)
        if wrong:
            raise Failure(wrong)

    settled(("h0-1", "h1-0", "h1-2"), ("h0-1", "h1-0", "h1-2", "h0-2"))
    # saquery reads each member back (one MCMemberRecord per port GID asked).
    for h in ("h0-1", "h1-0", "h1-2", "h0-2"):
        port_guid = nodes[names[h]]["port_guids"].get(1, names[h])
        gid = str(ipaddress.IPv6Address((0xfe80 << 112) | port_guid))
        mr = run(["saquery", "MCMR", "--gid", gid], work, sock, check=False)
        out = mr.stdout.lower()
        if mr.returncode != 0 or "0xc000" not in out or bcast not in out or gid not in out:
            raise Failure("saquery MCMR --gid %s (%s): rc %d\n%s%s" % (gid, h, mr.returncode, mr.stdout, mr.stderr[-300:]))
    join("h1-2", op="leave")
    settled(("h0-1", "h1-0"), ("h0-1",))  # after h1-2 left, h0-1 reaches h1-0 alone
    print("multicast: joins from 3 hosts (+1 send-only), each read back with saquery MCMR --gid; the MFTs "
          "read back with ibroute -M reach exactly the receivers; a leave prunes the tree")


def restart_keeps_groups(bg, daemon_cmd, work, sock, nodes):
    """kill -9 of the SM, then a new one on the same state directory: it reads the
    multicast groups back (ibsim's hosts never re-register, so nobody joins again), and
    the MFTs ibroute -M reads are what they were, 0xC000's tree included; saquery finds
    the members at the same MLID. Without the groups a restarted SM cleared them."""
    switches = {g: n for g, n in nodes.items() if n["type"] == "Switch"}
    before = mfts(work, sock, switches)
    entries = sum(1 for t in before.values() if t.get(0xC000))
    if not entries:
        raise Failure("no switch forwards 0xC000 before the restart: %s" % before)
    bg.proc.kill()  # kill -9, by PID
    bg.proc.wait(timeout=10)
    log2 = os.path.join(work, "daemon-restarted.log")
    with Background(daemon_cmd(log2), work, sock, log2):
        deadline = time.time() + 30
        after = mfts(work, sock, switches)
        while after != before and time.time() < deadline:
            time.sleep(0.2)
            after = mfts(work, sock, switches)
        if after != before:
            raise Failure("after kill -9 and restart the MFTs changed:\nbefore %s\nafter %s" % (before, after))
        text = open(log2, errors="replace").read()
        m = re.search(r"multicast groups read back: (\d+) groups, (\d+) members", text)
        if not m:
            raise Failure("the restarted SM did not read the groups back:\n" + text[-2000:])
        h = next(g for g, n in nodes.items() if n.get("name") == "h0-1")
        gid = str(ipaddress.IPv6Address((0xfe80 << 112) | nodes[h]["port_guids"].get(1, h)))
        mr = sa_query(["MCMR", "--gid", gid], work, sock, "h1-1")
        if mr.returncode != 0 or "0xc000" not in mr.stdout.lower():
            raise Failure("saquery MCMR --gid %s after the restart: rc %d\n%s%s\n%s" % (
                gid, mr.returncode, mr.stdout, mr.stderr[-800:], text[-3000:]))
    print("restart: kill -9, then a new SM read back %s groups with %s members; ibroute -M unchanged on %d switches "
          "(0xC000 on %d); saquery finds h0-1 in 0xC000" % (m.group(1), m.group(2), len(switches), entries))


def trace_and_multipath(client, work, sock, sm_lid, ports, limited, outside, host_of):
    """ibtracert follows the programmed routes from the SM's port to every CA; a GetMulti
    MultiPathRecord from the SM's port (weft_sa_client) answers one PathRecord per
    destination GID, SLID and DLID right; between two limited members it answers none."""
    for guid, lid in ports:
        if lid == sm_lid:
            continue
        tr = run(["ibtracert", str(sm_lid), str(lid)], work, sock, check=False)
        if tr.returncode != 0 or not re.search(r"To ca .*lid %d-%d" % (lid, lid), tr.stdout):
            raise Failure("ibtracert %d %d: rc %d\n%s%s" % (sm_lid, lid, tr.returncode, tr.stdout, tr.stderr[-300:]))
    # Two records: umad2sim hands over the first RMPP segment only, and of an answer
    # ibsim carries no more than 224 bytes (a third record arrives cut; seen here).
    others = [(g, l) for g, l in ports if l != sm_lid][:2]
    r = run([client, "multipath", "1"] + ["0x%016x" % g for g, _ in others], work, sock, timeout=30, check=False)
    got = re.findall(r"slid (\d+) dlid (\d+)", r.stdout)
    want = [(str(sm_lid), str(l)) for _, l in others]
    if r.returncode != 0 or "method 0x94" not in r.stdout or got != want:
        raise Failure("MultiPathRecord from the SM's port: rc %d, %s (want %s)\n%s" % (r.returncode, got, want, r.stderr[-3000:]))
    r2 = run([client, "multipath", "1", "0x%016x" % outside[0]], work, sock, timeout=30, check=False,
             env={"SIM_HOST": host_of[limited[1]]})
    if r2.returncode != 0 or re.search(r"slid \d+", r2.stdout):
        raise Failure("MultiPathRecord between two limited members: rc %d\n%s%s" % (r2.returncode, r2.stdout, r2.stderr[-300:]))
    if "status 0x0000 method 0x94" not in r2.stdout:
        raise Failure("MultiPathRecord between two limited members: %s" % r2.stdout)
    print("ibtracert: %d routes from the SM's port reach their CA; MultiPathRecord: %d PathRecords from the "
          "SM's port, none between two limited members" % (len(others), len(got)))


def layered_paths(weft, work, sock):
    """dfsssp on a torus: the SA answers each path with its layer's SL, and every
    switch maps those SLs to VLs of their own (read back with smpquery sl2vl)."""
    log = os.path.join(work, "dfsssp.log")
    with Background([weft, "sm", "--state-dir", os.path.join(work, "state-dfsssp"), "--routing-engine",
                     "dfsssp", "--log-file", log, "--rest", "off"], work, sock, log):
        m = re.search(r"routing uses (\d+) VLs", open(log).read())
        if not m:
            raise Failure("dfsssp on the torus logged no VL layers:\n" + open(log).read()[-1500:])
        vls = int(m.group(1))
        nodes = parse_ibnetdiscover(run(["ibnetdiscover"], work, sock).stdout)
        cas = sorted(pt[2] for n in nodes.values() if n["type"] != "Switch" for pt in n["ports"].values())
        sls = []
        for i in range(0, len(cas), 3):
            for j in range(1, len(cas), 7):
                if cas[i] == cas[j]:
                    continue
                out = run(["saquery", "--src-to-dst", "%d:%d" % (cas[i], cas[j])], work, sock, check=False).stdout
                if records(out, "PathRecord") != 1:
                    raise Failure("no PathRecord %d -> %d:\n%s" % (cas[i], cas[j], out))
                sls.append(int(field(out, "sl"), 16))
        if max(sls) >= vls or len(set(sls)) < 2:
            raise Failure("path SLs %s: want several, all below the %d VLs" % (sorted(set(sls)), vls))
        checked = 0
        for sw in (n for n in nodes.values() if n["type"] == "Switch"):
            for port in list(sw["ports"])[:2]:
                rows = sl2vl_rows(run(["smpquery", "sl2vl", str(sw["lid"]), str(port)], work, sock).stdout)
                for (i, o), t in rows.items():
                    if t[:vls] != list(range(vls)):
                        raise Failure("switch %d in %d out %d maps SLs to %s" % (sw["lid"], i, o, t))
                    checked += 1
    print("layered routes: dfsssp's %d VLs; %d PathRecords carry SLs %s; %d switch SL2VL tables map "
          "SL i to VL i" % (vls, len(sls), sorted(set(sls)), checked))


def dor_sl2vl_checks(work, sock, turns):
    """Every switch's SL2VL table toward a switch, for every input port (smpquery sl2vl):
    SL s goes toward dimension d on VL bit d of s, plus 2 after a turn back to an earlier
    dimension when `turns`. Returns (tables checked, tables of turns back)."""
    nodes = parse_ibnetdiscover(run(["ibnetdiscover"], work, sock).stdout)
    coords = {g: [int(x) for x in n["name"][2:].split("-")] for g, n in nodes.items() if n["type"] == "Switch"}
    checked = back = 0
    for g, sw in nodes.items():
        if sw["type"] != "Switch":
            continue
        dim_of = {port: (0 if coords[g][0] != coords[peer][0] else 1)
                  for port, (peer, _, _) in sw["ports"].items() if peer in coords}
        for port, dim in dim_of.items():
            rows = sl2vl_rows(run(["smpquery", "sl2vl", str(sw["lid"]), str(port)], work, sock).stdout)
            if not rows:
                raise Failure("smpquery sl2vl %d %d: no table" % (sw["lid"], port))
            for (i, o), t in rows.items():
                turned = turns and dim_of.get(i, -1) > dim
                want = [((sl >> dim) & 1) | (2 if turned else 0) for sl in range(4)]
                if t[:4] != want:
                    raise Failure("%s in %d out %d (dimension %d) maps SLs 0-3 to %s, want %s" %
                                  (sw["name"], i, o, dim, t[:4], want))
                checked += 1
                back += turned
    return checked, back


def dor_hop_vls(weft, work, sock, sim):
    """dor on a 5x5 torus picks a VL per hop as torus-2QoS does: every switch sends SL s
    toward dimension d on VL bit d of s (smpquery sl2vl, every input port), and the SA
    answers a path that crosses x's dateline alone with SL 1 (saquery). Then a switch
    fails (ibsim's Unlink of its every port): the routes turn early round its place,
    every (switch, LID) route still reaches its LID (dump_fts), and a hop that turns
    back to an earlier dimension takes VL bit 1 too, by input port."""
    conf = os.path.join(work, "torus55.conf")
    with open(conf, "w") as fh:  # the generator's GUIDs: switch i is ...1000 + i, x fastest
        fh.write("torus 5 5\nxp_link 0x0002c90300001000 0x0002c90300001001\n"
                 "yp_link 0x0002c90300001000 0x0002c90300001005\n")
    log = os.path.join(work, "dor.log")
    with Background([weft, "sm", "--state-dir", os.path.join(work, "state-dor"), "--routing-engine", "dor",
                     "--torus-config", conf, "--log-file", log, "--rest", "off"], work, sock, log):
        if "routing uses 2 VLs, picked per hop" not in open(log).read():
            raise Failure("dor logged no per-hop VLs:\n" + open(log).read()[-1500:])
        nodes = parse_ibnetdiscover(run(["ibnetdiscover"], work, sock).stdout)
        by_name = {n["name"]: n for n in nodes.values()}
        checked, _ = dor_sl2vl_checks(work, sock, False)
        src, dst = by_name["h4-1-0"]["ports"][1][2], by_name["h1-2-0"]["ports"][1][2]
        out = run(["saquery", "--src-to-dst", "%d:%d" % (src, dst)], work, sock).stdout
        if records(out, "PathRecord") != 1 or int(field(out, "sl"), 16) != 1:
            raise Failure("PathRecord h4-1-0 -> h1-2-0: want SL 1 (x's dateline only):\n" + out)
    print("dor: %d switch SL2VL tables (in, out) send SL bit d toward dimension d; h4-1-0 -> h1-2-0 on SL 1"
          % checked)
    gone = by_name["sw2-2"]
    for port in sorted(gone["ports"]):
        os.write(sim.fifo_fd, ('Unlink "sw2-2"[%d]\n' % port).encode())
    after = run([weft, "sm", "--once", "--state-dir", os.path.join(work, "state-dor"), "--routing-engine", "dor",
                 "--torus-config", conf], work, sock)
    for line in ("1 switch(es) and 0 link(s) of the shape missing", "routing uses 4 VLs, picked per hop"):
        if line not in after.stderr:
            raise Failure("after sw2-2 failed, the SM log lacks %r:\n%s" % (line, after.stderr[-2000:]))
    _, _, pairs, problems = read_routes(work, sock)
    if problems:
        raise Failure("after sw2-2 failed, %d of %d (switch, LID) pairs bad: %s" % (len(problems), pairs, problems[:3]))
    checked, back = dor_sl2vl_checks(work, sock, True)
    if not back:
        raise Failure("no SL2VL table of a turn back after sw2-2 failed")
    print("dor without sw2-2: %d (switch, LID) routes reach their LID; %d SL2VL tables, %d of turns back on VL bit 1"
          % (pairs, checked, back))
    # Then the x=0 y ring splits in two, y being the last dimension, and one of its cut
    # links is the seed's yp_link (no next_seed given): the seed's named neighbour is
    # placed all the same, and the switches cut off from a destination on that ring step
    # onto the ring beside and back.
    for end, port in (("sw0-0", 4), ("sw0-3", 5)):  # to sw0-1, to sw0-4 (the generator's ports)
        os.write(sim.fifo_fd, ('Unlink "%s"[%d]\n' % (end, port)).encode())
    split = run([weft, "sm", "--once", "--state-dir", os.path.join(work, "state-dor"), "--routing-engine", "dor",
                 "--torus-config", conf], work, sock)
    for line in ("1 switch(es) and 2 link(s) of the shape missing", "routing uses 4 VLs, picked per hop"):
        if line not in split.stderr:
            raise Failure("after the y ring at x=0 split, the SM log lacks %r:\n%s" % (line, split.stderr[-2000:]))
    if "refused" in split.stderr:
        raise Failure("a routing engine refused after the y ring split:\n" + split.stderr[-2000:])
    _, _, pairs, problems = read_routes(work, sock)
    if problems:
        raise Failure("after the y ring at x=0 split, %d of %d (switch, LID) pairs bad: %s"
                      % (len(problems), pairs, problems[:3]))
    print("dor without sw2-2 and with the y ring at x=0 split (the seed's yp link among the cuts): "
          "%d (switch, LID) routes reach their LID" % pairs)


def layered_updn(weft, work, sock, cut):
    """updn on a 4-ary 3-tree with 4 inter-switch links out (`cut`, switch names): the
    pairs of the cut switches close a cycle on one VL, so weft layers them onto a
    second. Read back: every switch reaches every LID (dump_fts), switches map SL i to
    VL i (smpquery sl2vl), and the SA answers some hosts' paths to a cut switch with
    SL 1 and every path with an SL below the VLs (saquery)."""
    log = os.path.join(work, "updn.log")
    with Background([weft, "sm", "--state-dir", os.path.join(work, "state-updn"), "--routing-engine",
                     "updn", "--log-file", log, "--rest", "off"], work, sock, log):
        m = re.search(r"routing uses (\d+) VLs", open(log).read())
        if not m or int(m.group(1)) != 2:
            raise Failure("updn on the degraded tree did not route on 2 VLs:\n" + open(log).read()[-1500:])
        nodes, _, pairs, problems = read_routes(work, sock)
        if problems:
            raise Failure("updn's layered tables read back with dump_fts: %s" % problems[:5])
        by_name = {n["name"]: n for n in nodes.values()}
        targets = [by_name[c]["lid"] for c in cut if c in by_name and by_name[c]["type"] == "Switch"]
        if not targets:
            raise Failure("none of the cut switches %s found in ibnetdiscover" % cut)
        leaves_seen, cas = set(), []
        for n in nodes.values():
            if n["type"] == "Switch":
                continue
            leaf = n["ports"][min(n["ports"])][0]
            if leaf not in leaves_seen:
                leaves_seen.add(leaf)
                cas.append(n["ports"][min(n["ports"])][2])
        sls = []
        for src in cas:
            for dst in targets + cas[:2]:
                if src == dst:
                    continue
                out = run(["saquery", "--src-to-dst", "%d:%d" % (src, dst)], work, sock, check=False).stdout
                if records(out, "PathRecord") != 1:
                    raise Failure("no PathRecord %d -> %d:\n%s" % (src, dst, out))
                sls.append(int(field(out, "sl"), 16))
        if max(sls) != 1 or sls.count(1) * 4 > len(sls):
            raise Failure("path SLs %s: want a few on SL 1, none above" % sls)
        checked = 0
        for sw in (n for n in nodes.values() if n["type"] == "Switch"):
            port = min(sw["ports"])
            rows = sl2vl_rows(run(["smpquery", "sl2vl", str(sw["lid"]), str(port)], work, sock).stdout)
            for (i, o), t in rows.items():
                if t[:2] != [0, 1]:
                    raise Failure("switch %d in %d out %d maps SLs to %s" % (sw["lid"], i, o, t))
                checked += 1
    print("degraded tree: updn on 2 VLs, links of %s cut; %d (switch, LID) routes read back whole; %d of %d "
          "PathRecords on SL 1 (hosts toward cut switches); %d switch SL2VL tables map SL i to VL i"
          % (cut, pairs, sls.count(1), len(sls), checked))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--flood", required=True, help="the weft_sa_flood binary")
    ap.add_argument("--sa-client", required=True, help="the weft_sa_client binary")
    a = ap.parse_args()
    work = os.path.join(a.scratch, "tables")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    net = os.path.join(work, "ft2.net")
    run([a.weft, "topo", "ft2:leaves=2,spines=2,hosts=3", "-o", net], work, "", preload=False)
    sock = "weft-e2e-tables-%d" % os.getpid()
    state = os.path.join(work, "state")

    # weft config check on OpenSM's own full option file, and on a broken one.
    osm_conf = os.path.join(work, "opensm-default.conf")
    subprocess.run(["opensm", "-c", osm_conf], capture_output=True, timeout=60)
    if not os.path.exists(osm_conf):
        raise Failure("opensm -c wrote no file")
    chk = run([a.weft, "config", "check", osm_conf], work, "", preload=False, check=False)
    if chk.returncode != 0 or "0 not implemented" not in chk.stdout:
        raise Failure("weft config check on opensm -c output: rc %d\n%s" % (chk.returncode, chk.stdout))
    broken = os.path.join(work, "broken.conf")
    open(broken, "w").write("# broken\nqos TRUE\nqos_sl2vl 0,1,2\nsweep_intervall 5\n")
    chk = run([a.weft, "config", "check", broken], work, "", preload=False, check=False)
    want_err = ["%s:3: qos_sl2vl: 3 entries, expected 16" % broken,
                '%s:4: unknown option "sweep_intervall" (did you mean "sweep_interval"?)' % broken]
    if chk.returncode != 1 or not all(w in chk.stdout for w in want_err):
        raise Failure("weft config check on a broken file: rc %d\n%s" % (chk.returncode, chk.stdout))
    print("config check: opensm -c output passes; a broken file is refused with file:line")

    with Ibsim(net, work, sock):
        run([a.weft, "sm", "--once", "--state-dir", state], work, sock)
        nodes = parse_ibnetdiscover(run(["ibnetdiscover", "-g"], work, sock).stdout)
        cas = sorted((g, n) for g, n in nodes.items() if n["type"] != "Switch")
        switches = [n for n in nodes.values() if n["type"] == "Switch"]
        if len(cas) != 6 or len(switches) != 4:
            raise Failure("expected 6 CAs and 4 switches, ibnetdiscover found %d and %d" % (len(cas), len(switches)))
        # The SM runs on the net file's first CA: ibsim attaches the client there.
        sm_lid = int(re.search(r"SM LID (\d+)", run([a.weft, "sm", "--once", "--state-dir", state], work, sock).stderr).group(1))
        ports = []  # (port guid, lid)
        for g, n in cas:
            lid = n["ports"][1][2]
            ports.append((n["port_guids"].get(1, g), lid))
        others = [p for p in ports if p[1] != sm_lid]
        full, limited, outside = others[0], others[1], others[2]

        parts = os.path.join(work, "partitions.conf")
        open(parts, "w").write(
            "# tenants\n"
            "Default=0x7fff, ipoib : ALL, SELF=full ;   # OpenSM's own rule, with IPoIB\n"
            "  Storage = 0x8002 , ipoib, mtu=4 :\n"
            "      0x%016x = full ,\n"
            "      0x%016x ;\n" % (full[0], limited[0]))
        conf = os.path.join(work, "opensm.conf")
        open(conf, "w").write(
            "# an admin's opensm.conf\n"
            "partition_config_file   %s\n"
            "qos TRUE\n"
            "qos_ca_sl2vl   %s   # hosts: SL pairs share VLs\n"
            "qos_swe_sl2vl %s\n"
            "qos_high_limit 5\n"
            "qos_vlarb_high 0:8,1:4\n"
            "qos_vlarb_low 0:32,1:16,2:8,3:4\n"
            "m_key 0x0000000000000000\n"
            "perfmgr_redir FALSE\n"
            "head_of_queue_lifetime 0x13\n"
            "leaf_head_of_queue_lifetime 0x0e\n"
            "packet_life_time 0x11\n"
            "log_max_size    0\n" % (parts, ",".join(map(str, CA_SL2VL)), ",".join(map(str, SWE_SL2VL))))
        up = run([a.weft, "sm", "--once", "--state-dir", state, "--config", conf], work, sock)
        if "%s:10: OpenSM option \"perfmgr_redir\" is not implemented by weft" % conf not in up.stderr:
            raise Failure("the SM did not report perfmgr_redir (set, not implemented) with file:line:\n" + up.stderr[-2000:])
        print(up.stdout)

        def pk(lid):
            return pkeys(run(["smpquery", "pkeys", str(lid)], work, sock).stdout)

        want = {sm_lid: [0xffff], full[1]: [0x7fff, 0x8002], limited[1]: [0x7fff, 0x0002], outside[1]: [0x7fff]}
        for lid, keys in want.items():
            got = pk(lid)
            if got != keys:
                raise Failure("smpquery pkeys %d: %s, want %s" % (lid, [hex(k) for k in got], [hex(k) for k in keys]))
        print("pkeys: SM port %s, full member %s, limited member %s, outsider %s"
              % tuple(" ".join(hex(k) for k in pk(l)) for l in (sm_lid, full[1], limited[1], outside[1])))

        ca_want = [v & 7 if v != 15 else 15 for v in CA_SL2VL]  # ibsim ports operate VL0-7
        sw_want = [v & 7 if v != 15 else 15 for v in SWE_SL2VL]
        for _, lid in ports:
            rows = sl2vl_rows(run(["smpquery", "sl2vl", str(lid)], work, sock).stdout)
            if rows.get((0, 0)) != ca_want:
                raise Failure("smpquery sl2vl %d: %s, want %s" % (lid, rows, ca_want))
        checked = 0
        for sw in switches:
            for port, (peer, _, _) in sw["ports"].items():
                rows = sl2vl_rows(run(["smpquery", "sl2vl", str(sw["lid"]), str(port)], work, sock).stdout)
                linked_in = [0] + list(sw["ports"])
                for i in linked_in:
                    if rows.get((i, port)) != sw_want:
                        raise Failure("switch lid %d in %d out %d: %s, want %s"
                                      % (sw["lid"], i, port, rows.get((i, port)), sw_want))
                    checked += 1
        print("sl2vl: %d CA tables and %d switch (in, out) tables as configured" % (len(ports), checked))

        arb = vlarb(run(["smpquery", "vlarb", str(full[1])], work, sock).stdout)
        if arb.get("low", [])[:5] != [(0, 32), (1, 16), (2, 8), (3, 4), (0, 0)] or \
                arb.get("high", [])[:3] != [(0, 8), (1, 4), (0, 0)]:
            raise Failure("smpquery vlarb %d: %s" % (full[1], arb))
        # ibsim drops VLHighLimit from PortInfo Sets: the SM must say so rather than
        # claim it, and must not count on it.
        pi = run(["smpquery", "portinfo", str(full[1])], work, sock).stdout
        kept = re.search(r"VLHighLimit:\.+5\b", pi)
        if not kept and "did not keep VLHighLimit 5 (holds 0)" not in up.stderr:
            raise Failure("VLHighLimit not 5, and the SM did not report it:\n" + pi)
        print("vlarb as configured: low %s, high %s; VLHighLimit %s" % (
            arb["low"][:4], arb["high"][:2], "5" if kept else "dropped by ibsim, reported by the SM"))

        # The timers: HOQLife 19 on switch ports facing switches, 14 on those facing
        # CAs (ibsim's ports come with 31), LifeTimeValue 17 on every switch.
        hoqs = {}
        for sw in switches:
            si = run(["smpquery", "switchinfo", str(sw["lid"])], work, sock).stdout
            life = re.search(r"LifeTime:\.+(\d+)", si)
            if not life or int(life.group(1)) != 17:
                raise Failure("smpquery switchinfo %d: LifeTime not 17:\n%s" % (sw["lid"], si))
            for port, (peer, _, _) in sw["ports"].items():
                leaf = nodes.get(peer, {}).get("type") != "Switch"
                pi = run(["smpquery", "portinfo", str(sw["lid"]), str(port)], work, sock).stdout
                hoq = re.search(r"HoqLife:\.+(\d+)", pi)
                want = 14 if leaf else 19
                if not hoq or int(hoq.group(1)) != want:
                    raise Failure("smpquery portinfo %d %d (facing a %s): HoqLife not %d:\n%s"
                                  % (sw["lid"], port, "CA" if leaf else "switch", want, pi))
                hoqs[leaf] = hoqs.get(leaf, 0) + 1
        if not hoqs.get(True) or not hoqs.get(False):
            raise Failure("no switch port facing a CA or none facing a switch: %s" % hoqs)
        print("timers: HoqLife 19 on %d switch ports facing switches, 14 on %d facing CAs; LifeTime 17 on %d "
              "switches" % (hoqs[False], hoqs[True], len(switches)))

        again = run([a.weft, "sm", "--once", "--state-dir", state, "--config", conf], work, sock)
        m = re.search(r"P_Key blocks (\d+) written .*SL2VL (\d+) written .*VLArb blocks (\d+) written", again.stdout)
        if not m or any(int(x) for x in m.groups()):
            raise Failure("restart rewrote tables the ports hold:\n" + again.stdout)
        print("restart: " + m.group(0))

        # The SA, asked by saquery while weft runs as the subnet's SM.
        log = os.path.join(work, "daemon.log")
        def daemon_cmd(log_file):
            return [a.weft, "sm", "--state-dir", state, "--config", conf, "--log-file", log_file, "--rest", "off"]

        with Background(daemon_cmd(log), work, sock, log) as bg:
            sa_checks(work, sock, sm_lid, full, limited, outside)
            # A flood with garbage mixed in: every valid query answered, none lost.
            top = max(p[1] for p in ports)
            fl = run([a.flood, "--lids", "1-%d" % top, "--queries", "20000", "--window", "16", "--garbage"],
                     work, sock, check=False, timeout=120)
            if fl.returncode != 0:
                raise Failure("SA flood: rc %d\n%s%s" % (fl.returncode, fl.stdout, fl.stderr[-500:]))
            print("SA flood: " + fl.stdout.splitlines()[0])
            sa_checks(work, sock, sm_lid, full, limited, outside)
            multicast_checks(a.sa_client, work, sock, nodes)
            host_of = {n["ports"][1][2]: n["name"] for _, n in cas}
            trace_and_multipath(a.sa_client, work, sock, sm_lid, ports, limited, outside, host_of)
            restart_keeps_groups(bg, daemon_cmd, work, sock, nodes)
    # Layered routes (dfsssp on a torus): path SLs from the SA, SL2VL on the switches.
    torus = os.path.join(work, "torus.net")
    run([a.weft, "topo", "torus:dims=4x4x3,hosts=1", "-o", torus], work, "", preload=False)
    with Ibsim(torus, work, sock + "-t"):
        layered_paths(a.weft, work, sock + "-t")
    # dor's VL per hop on a 5x5 torus (datelines on both rings).
    torus55 = os.path.join(work, "torus55.net")
    run([a.weft, "topo", "torus:dims=5x5,hosts=1", "-o", torus55], work, "", preload=False)
    with Ibsim(torus55, work, sock + "-d") as sim:
        dor_hop_vls(a.weft, work, sock + "-d", sim)

    # Layered up/down routes on a degraded tree: a 4-ary 3-tree, 4 inter-switch links out.
    tree = os.path.join(work, "degraded.net")
    run([a.weft, "topo", "ft3:pods=4,leaves=4,aggs=4,hosts=2,cores=4", "-o", tree], work, "", preload=False)
    cut = degrade_net(tree, 4, seed=1)
    with Ibsim(tree, work, sock + "-u"):
        layered_updn(a.weft, work, sock + "-u", sorted({end[0] for link in cut for end in link}))
    print("PASS tables")


if __name__ == "__main__":
    run_main(main)
