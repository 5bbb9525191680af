#!/usr/bin/env python3
"""Tori that lose links and switches: weft's dor beside OpenSM's torus-2QoS, on the same
fabric, in one run.

A 5x5x5 torus (radix 5: every ring has a dateline), pristine and with failures taken
out of the ibsim net file: one link, one switch, an x ring split in two (two of its
links), a z ring (the last dimension) split in two, and 9 random inter-switch links
(ibsim_bringup.degrade_net, seed 1). For each:
ibsim runs the net file, `opensm -o -R torus-2QoS --torus_config FILE` brings it up and
its tables are read back (dump_fts plus the block it skips), and ibnetdiscover gives the
fabric with OpenSM's LIDs; `weft route --engine dor --torus FILE` routes that fabric and
grades both table sets with the same analyzer (reach, eBB, busiest link, CDG), and
counts the LFT entries where weft's tables differ from the ones OpenSM wrote.

OpenSM falls back to its default engine when torus-2QoS refuses; the table names the
engine that routed ("torus-2QoS -> minhop") and the reason from its log. torus-2QoS's
SLs and per-port SL2VL tables are not in the dump: its CDG is not graded, and its VLs
are what its log says (none: n/a); its fallback's (one VL) is. weft's VLs are the ones its maps name, its CDG
checked over them.

Then weft's own fault sweep on the same torus (`weft route --fault-sweep`: nested sets
of random links, seed 1): how many failed links dor routes through before it first
refuses, and why it refuses there. OpenSM has no such sweep.
Usage: bench_torus.py --weft BUILD/app/weft
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, HERE)
import ibsim_bringup as b  # noqa: E402
import bench_bringup as bb  # noqa: E402
import bench_routing as br  # noqa: E402

BASE = 0x0002c90300001000  # the generator's switch GUIDs: switch i is BASE + i, x fastest


def conf_text(r):
    return "torus %d %d %d\nxp_link 0x%016x 0x%016x\nyp_link 0x%016x 0x%016x\nzp_link 0x%016x 0x%016x\n" % (
        r, r, r, BASE, BASE + 1, BASE, BASE + r, BASE, BASE + r * r)


def drop_lines(path, pred):
    """Takes out of an ibsim net file every port line `pred(node, peer)` names (both ends
    are named by their own lines); returns how many."""
    with open(path) as fh:
        lines = fh.read().split("\n")
    node, keep, dropped = None, [], 0
    for line in lines:
        m = re.match(r'(Switch|Ca|Hca)\s+\d+\s+"([^"]+)"', line)
        if m:
            node = m.group(2)
        m = re.match(r'\[(\d+)\]\s+"([^"]+)"\[(\d+)\]', line)
        if m and node and pred(node, m.group(2)):
            dropped += 1
            continue
        keep.append(line)
    with open(path, "w") as fh:
        fh.write("\n".join(keep))
    return dropped


def cut_links(path, pairs):
    want = {frozenset(p) for p in pairs}
    n = drop_lines(path, lambda a, z: frozenset((a, z)) in want)
    if n != 2 * len(pairs):
        raise RuntimeError("%s: %d port lines for %d links" % (path, n, len(pairs)))


def fail_switch(path, name):
    """The switch stays in the file, every link of it gone (and so its hosts')."""
    if not drop_lines(path, lambda a, z: name in (a, z)):
        raise RuntimeError("%s: no links of %s" % (path, name))


def lft_entries(path):
    """{(switch GUID, LID): port} of an ibroute/dump_fts-format dump."""
    out, cur = {}, None
    for line in open(path):
        m = re.search(r"guid (0x[0-9a-f]+)", line)
        if line.startswith("Unicast") and m:
            cur = int(m.group(1), 16)
            continue
        m = re.match(r"^(0x[0-9a-f]+) (\d+)", line)
        if m and cur is not None:
            out[(cur, int(m.group(1), 16))] = int(m.group(2))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--radix", type=int, default=5)
    ap.add_argument("--scratch", default="/tmp/weft-bench-torus")
    a = ap.parse_args()
    if not shutil.which("opensm"):
        sys.exit("opensm is not installed (scripts/install-deps.sh --bench)")
    r = a.radix
    spec = "torus:dims=%dx%dx%d,hosts=1" % (r, r, r)
    mid = r // 2
    cases = [
        ("pristine", None),
        ("1 link", lambda net: cut_links(net, [("sw1-%d-%d" % (mid, mid), "sw2-%d-%d" % (mid, mid))])),
        ("1 switch", lambda net: fail_switch(net, "sw%d-%d-%d" % (mid, mid, mid))),
        ("x ring split", lambda net: cut_links(net, [("sw0-%d-%d" % (mid, mid), "sw1-%d-%d" % (mid, mid)),
                                                     ("sw3-%d-%d" % (mid, mid), "sw4-%d-%d" % (mid, mid))])),
        ("z ring split", lambda net: cut_links(net, [("sw%d-%d-0" % (mid, mid), "sw%d-%d-1" % (mid, mid)),
                                                     ("sw%d-%d-3" % (mid, mid), "sw%d-%d-4" % (mid, mid))])),
        ("9 random links", lambda net: b.degrade_net(net, 9, seed=1)),
    ]
    rows = []
    for name, damage in cases:
        tag = name.replace(" ", "-")
        work = os.path.join(a.scratch, tag)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        net = os.path.join(work, "torus.net")
        b.run([a.weft, "topo", spec, "-o", net], work, "", preload=False)
        if damage:
            damage(net)
        conf = os.path.join(work, "torus-2QoS.conf")
        with open(conf, "w") as fh:
            fh.write(conf_text(r))
        sargs, _, _ = bb.ibsim_args(net)
        sock = "weft-bench-torus-%s-%d" % (tag, os.getpid())
        dump, topo, info = br.opensm_run("torus-2QoS", net, os.path.join(work, "opensm"), sock, sargs,
                                         osm_args=["-Q", "--torus_config", conf])
        print("%s: opensm torus-2QoS: %s" % (name, info), file=sys.stderr)
        if not topo:
            rows.append((name, "opensm torus-2QoS", {"status": info["status"]}))
            continue
        mine = os.path.join(work, "dor.lfts")
        j = br.weft_route(a.weft, topo, ["--engine", "dor", "--torus", conf, "--write-lfts", mine])[0]
        if j.get("status") == "ok":
            theirs, ours = lft_entries(dump), lft_entries(mine)
            j["unlike"] = "%d of %d" % (sum(ours.get(k) != v for k, v in theirs.items()), len(theirs))
        rows.append((name, "weft dor", j))
        o = br.weft_route(a.weft, topo, ["--lfts", "torus-2QoS=%s" % dump])[0]
        o["vls"] = info["vls"] if info.get("vls_logged") else None
        if info["used"] == "torus-2QoS":
            o["cdg_acyclic"] = None  # its SLs and SL2VL tables are not in the dump
        else:
            o["vls"] = 1  # its fallback (minhop): one VL, whose CDG the dump holds whole
        label = "opensm torus-2QoS"
        if info["used"] != "torus-2QoS":
            label += " -> " + info["used"]
            o["reason"] = info.get("why", "")
        rows.append((name, label, o))

    # "LFT entries unlike": weft's entries that differ from the ones OpenSM's engine wrote
    # (read back), of all of them.
    print("| %dx%dx%d torus | engine | status | reach %% | eBB | max link load | VLs | CDG | "
          "LFT entries unlike OpenSM's |" % (r, r, r))
    print("|---|---|---|---|---|---|---|---|---|")
    for name, label, j in rows:
        st = j.get("status", "?")
        if st not in ("ok", "incomplete"):
            print("| %s | %s | %s | | | | | | |" % (name, label, (st + ": " + j.get("reason", ""))[:100]))
            continue
        cdg = j.get("cdg_acyclic")
        print("| %s | %s | %s | %.3f | %.4f | %d | %s | %s | %s |" % (
            name, label, st, j["reachable_pct"], j["ebb"], j["max_link_load"],
            "n/a" if j.get("vls") is None else j["vls"],
            "n/a" if cdg is None else ("acyclic" if cdg else "CYCLE"), j.get("unlike", "")))
        if "->" in label and j.get("reason"):
            print("|  | (%s) | | | | | | | |" % j["reason"][:100])

    # The fault sweep, on the generator's fabric with the description of the pristine one.
    conf = os.path.join(a.scratch, "sweep-torus-2QoS.conf")
    with open(conf, "w") as fh:
        fh.write(conf_text(r))
    most = 60  # failed links at most (of 375); the sweep goes on past its first refusal
    sweep = br.weft_route(a.weft, spec, ["--engine", "dor", "--torus", conf, "--fault-sweep", str(most),
                                         "--no-patterns"])[0]
    first = sweep["first_refusal"]
    routed = [p for p in sweep["sweep"] if p["status"] == "ok"]
    print()
    if first is None:
        print("fault sweep (weft dor): routed through all %d failed links" % most)
    else:
        why = next(p for p in sweep["sweep"] if p["failed_links"] == first).get("reason", "")
        print("fault sweep (weft dor): routed through %d failed links (VLs %s); first refused at %d: %s" % (
            first - 1, max((p.get("vls", 0) for p in routed), default=0), first, why))


if __name__ == "__main__":
    main()
