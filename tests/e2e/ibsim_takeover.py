#!/usr/bin/env python3
"""A new master trusts nothing it cached (issue 40), on ibsim, refereed by infiniband-diags.

weft was master, stood by while OpenSM 3.3.23 held the fabric with its own routing
tables, and takes the fabric back when OpenSM dies. Before the fix weft's takeover
sweep wrote 0 LFT blocks (LinearFDBTop had not moved, so its cache said the switches
held its tables): OpenSM's tables stayed in the switches while weft published its own,
and the next link event left loops. One fabric, a 3-level fat tree (48 switches, 32
CAs, 80 LIDs: two LFT blocks a switch, so that a link event rewrites some blocks and
leaves others):
1. weft (priority 1, minhop, REST on) at the first host brings the subnet up; its
   tables are read over REST (/api/v1/switches/{guid}/lft) and equal the read-back.
2. OpenSM (priority 5, updn rooted at a leaf, which routes unlike minhop) joins at
   the last host: weft hands over (STANDBY), OpenSM sweeps. sminfo finds OpenSM
   master; the LFTs read back (dump_fts) differ from weft's in N > 0 (switch, LID)
   entries, LIDs unchanged.
3. kill -9 of OpenSM: weft is MASTER again (its /api/v1/sm, sminfo) after a heavy sweep.
4. Every switch's LFT read back equals, entry for entry, the one weft publishes; the
   takeover sweep wrote at least as many LFT blocks as held OpenSM's entries.
5. ibsim's console unlinks a leaf uplink: after weft's sweep of the new topology the
   tables read back route every (switch, LID) pair without a loop or a drop, and are
   still weft's.
Measured before the fix (7814048^): step 4 finds 1,694 of 3,840 entries OpenSM's (0
LFT blocks written, 0 read), and after the Unlink 17 (switch, LID) pairs loop.
The figures (entries differing, the takeover sweep's LFT blocks written and read back)
are printed. OpenSM 3.3.23 handed over to from STANDBY sometimes enters MASTER and
never sweeps (see ibsim_standby.py): such a run starts afresh, at most 3 times, and
says so. Everything started is stopped by PID, also on failure."""
import argparse
import http.client
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ibsim_bringup as b  # noqa: E402
import ibsim_standby as sb  # noqa: E402

TOPO = "ft3:pods=4,leaves=4,aggs=4,hosts=2,cores=4"  # 48 switches, 32 CAs, 160 links
ATTEMPTS = 3              # fresh runs when OpenSM enters MASTER and never sweeps
OSM_STALL_S = 60          # ... judged so after this long without its SUBNET UP
WAIT_S = 120


class Stuck(b.Failure):
    pass


class Sm(sb.Sm):
    """ibsim_standby's SM with OpenSM's updn roots, and a check that it still runs."""

    def __init__(self, kind, name, host, prio, work, sock, weft, users, engine, root_file=None):
        super().__init__(kind, name, host, prio, work, sock, weft, users, engine)
        if root_file and kind == "opensm":
            self.set_option("root_guid_file", root_file)

    def alive(self):
        if self.proc.poll() is not None:
            raise b.Failure("%s exited %s:\n%s\n%s" % (self.name, self.proc.returncode, self.text()[-2000:],
                                                      self.stdout()[-1000:]))

    def try_api(self):
        """/api/v1/sm, or None while the REST server does not answer."""
        try:
            return self.api()
        except (OSError, http.client.HTTPException, ValueError):
            return None


def weft_tables(weft, switches):
    """{switch guid: {lid: port}} as weft publishes them."""
    out = {}
    for guid in switches:
        j = weft.api("/api/v1/switches/0x%016x/lft" % guid)
        out[guid] = {e["lid"]: e["port"] for e in j["entries"] if e["lid"] > 0}
    return out


def differing(lfts, tables):
    """(switch guid, LID, port read back, port weft publishes) where they differ, over
    every LID either side holds (dump_fts lists the valid entries up to LinearFDBTop)."""
    out = []
    for guid, want in sorted(tables.items()):
        got = lfts.get(guid, (None, {}, 0))[1]
        for lid in sorted(set(got) | set(want)):
            if lid > 0 and got.get(lid) != want.get(lid):
                out.append((guid, lid, got.get(lid), want.get(lid)))
    return out


def show(diffs, names, k=5):
    return ", ".join("%s LID %d: port %s read back, weft %s" % (names.get(g, hex(g)), lid, got, want)
                     for g, lid, got, want in diffs[:k])


def weft_swept(weft, heavy0, check, what):
    """Until weft is MASTER after a heavy sweep past `heavy0` (its /api/v1/sm), that
    sweep brought the subnet up, none is running and `check(state)` holds."""
    deadline = time.time() + WAIT_S
    st = None
    while time.time() < deadline:
        weft.alive()
        st = weft.try_api()
        if (st and st["state"] == "MASTER" and st["sweeps"]["heavy"] > heavy0 and not st["sweeping"]
                and st["last_sweep"] and st["last_sweep"]["subnet_up"] and check(st)):
            return st
        time.sleep(0.1)
    raise b.Failure("%s: weft not MASTER after a sweep in %d s; /api/v1/sm: %s\n%s" %
                    (what, WAIT_S, st and {k: st[k] for k in ("state", "sweeps", "sweeping")},
                     weft.text()[-2000:]))


def first_master_summary(weft, out0):
    """The first summary weft printed as master after `out0` (its stdout before)."""
    body = weft.master_summary(out0)
    # Before issue 40 the line ended "LFT blocks (N read), ..." (no spot checks).
    w = re.search(r"writes\s+(\d+) PortInfo, (\d+) SwitchInfo, (\d+) LFT blocks \((\d+) read(?:, (\d+) spot-checked, "
                  r"(\d+) switches found changed)?\)", body)
    if not w:
        raise b.Failure("weft's summary lacks the writes line:\n" + body)
    return {"portinfo": int(w.group(1)), "switchinfo": int(w.group(2)), "written": int(w.group(3)),
            "read": int(w.group(4)), "new_term": "a new master term" in body, "line": re.sub(r"\s+", " ", w.group(0))}


def osm_up(osm):
    """Until OpenSM logs SUBNET UP. Entered MASTER and no SUBNET UP OSM_STALL_S later: Stuck."""
    deadline, master_at = time.time() + WAIT_S, None
    while "SUBNET UP" not in osm.text():
        osm.alive()
        if master_at is None and "Entering MASTER state" in osm.text():
            master_at = time.time()
        if master_at is not None and time.time() - master_at > OSM_STALL_S:
            raise Stuck("OpenSM entered MASTER and logged no SUBNET UP in %d s" % OSM_STALL_S)
        if time.time() > deadline:
            raise b.Failure("OpenSM: no SUBNET UP in %d s:\n%s" % (WAIT_S, osm.text()[-2500:]))
        time.sleep(0.1)


def master_guid(work, sock):
    """The master as `sminfo` finds it from the tools' node (through its port's SM LID)."""
    info = b.run(["sminfo"], work, sock, check=False).stdout
    m = re.search(r"sm guid 0x([0-9a-f]+).*SMINFO_MASTER", info)
    return int(m.group(1), 16) if m else None


def master_is(work, sock, guid, what):
    deadline = time.time() + 30
    while master_guid(work, sock) != guid:
        if time.time() > deadline:
            raise b.Failure("%s: sminfo finds master %s, not 0x%x" % (what, master_guid(work, sock), guid))
        time.sleep(0.2)


def roles(net):
    """From a `weft topo` fat tree's net file: the hosts of weft, OpenSM and the tools
    (the first, the last and the third CA: three leaves in TOPO), OpenSM's updn
    root (the second leaf's GUID) and the link to cut (the third leaf's first uplink)."""
    text = open(net).read()
    hosts = re.findall(r'^Ca\s+\d+\s+"([^"]+)"', text, re.M)
    leaves = re.findall(r'^switchguid=(0x[0-9a-f]+)\s*\nSwitch\s+\d+\s+"(leaf[^"]*)"\s*\n((?:\[.*\n?)+)', text, re.M)
    if len(hosts) < 3 or len(leaves) < 3:
        raise b.Failure("%s: want 3 CAs and 3 leaves or more" % net)
    ups = re.findall(r'^\[(\d+)\]\s+"(?!h)', leaves[2][2], re.M)
    if not ups:
        raise b.Failure("%s: %s has no uplink" % (net, leaves[2][1]))
    return hosts[0], hosts[-1], hosts[2], leaves[1][0], leaves[1][1], (leaves[2][1], int(ups[0]))


def one_run(a, users, attempt):
    work = os.path.join(a.scratch, "takeover")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    net = os.path.join(work, "ft.net")
    b.run([a.weft, "topo", a.topo, "-o", net], work, "", preload=False)
    weft_host, osm_host, tools_host, root_guid, root_leaf, cut = roles(net)
    # Every infiniband-diags client (b.run, b.read_routes) attaches at the tools' host;
    # the SMs set their own SIM_HOST.
    os.environ["SIM_HOST"] = tools_host
    root_file = os.path.join(work, "root_guids")
    with open(root_file, "w") as f:
        f.write(root_guid + "\n")
    sock = "weft-e2e-takeover-%d-%d" % (os.getpid(), attempt)
    failures = []
    with b.Ibsim(net, work, sock) as sim:
        weft = Sm("weft", "weft", weft_host, 1, work, sock, a.weft, users, "minhop")
        osm = Sm("opensm", "opensm", osm_host, 5, work, sock, None, None, "updn", root_file)
        try:
            # 1. weft master, minhop.
            weft.start()
            weft.wait(r"SUBNET UP", 1, WAIT_S)
            st = weft_swept(weft, 0, lambda s: True, "bring-up")
            nodes, lfts0, pairs, problems = b.read_routes(work, sock)
            names = {g: n["name"] for g, n in nodes.items()}
            switches = sorted(g for g, n in nodes.items() if n["type"] == "Switch")
            lids0 = sb.lids_of(nodes)
            links0 = st["last_sweep"]["links"]
            if problems:
                raise b.Failure("weft's bring-up: %d of %d routes wrong: %s" % (len(problems), pairs, problems[:3]))
            own = weft_tables(weft, switches)
            d = differing(lfts0, own)
            if d:
                raise b.Failure("after weft's bring-up %d entries read back differ from weft's: %s" %
                                (len(d), show(d, names)))
            weft_guid, osm_guid = sb.port_guid_of(work, sock, weft_host), sb.port_guid_of(work, sock, osm_host)
            master_is(work, sock, weft_guid, "bring-up")
            print("1. weft (minhop) master: %d switches, %d LIDs, %d links; %d (switch, LID) pairs route, "
                  "the read-back equals weft's tables" % (len(switches), len(lids0), links0, pairs))

            # 2. OpenSM outranks weft: weft hands over, OpenSM programs its updn tables.
            osm.start()
            osm_up(osm)
            master_is(work, sock, osm_guid, "handover")
            deadline = time.time() + WAIT_S
            while (weft.try_api() or {}).get("state") != "STANDBY":
                weft.alive()
                if time.time() > deadline:
                    raise b.Failure("weft is not STANDBY under OpenSM: %s" % weft.try_api())
                time.sleep(0.2)
            nodes, theirs, pairs, problems = b.read_routes(work, sock)
            if sb.lids_of(nodes) != lids0:
                raise b.Failure("LIDs changed when OpenSM took the fabric")
            before = differing(theirs, own)
            if not before:
                raise b.Failure("OpenSM's updn tables equal weft's minhop ones: the takeover would prove nothing")
            sw_before = {g for g, _, _, _ in before}
            print("2. OpenSM (updn, root %s) master, weft STANDBY: %d of %d (switch, LID) entries differ from "
                  "weft's tables, on %d of %d switches (OpenSM's routes: %d of %d pairs unrouted or wrong)" %
                  (root_leaf, len(before), sum(len(t) for t in own.values()), len(sw_before), len(switches),
                   len(problems), pairs))

            # 3. kill -9 of OpenSM: weft takes the fabric back.
            st = weft.api()
            heavy0, out0 = st["sweeps"]["heavy"], weft.stdout()
            osm.kill9()
            weft_swept(weft, heavy0, lambda s: "weft: SUBNET UP" in weft.stdout()[len(out0):], "takeover")
            summ = first_master_summary(weft, out0)
            master_is(work, sock, weft_guid, "takeover")
            print("3. kill -9 of OpenSM: weft MASTER again; its takeover sweep: %s%s" %
                  (summ["line"], "; a new master term" if summ["new_term"] else ""))

            # 4. The switches hold weft's tables, every entry.
            nodes, back, pairs, problems = b.read_routes(work, sock)
            if sb.lids_of(nodes) != lids0:
                raise b.Failure("LIDs changed in the takeover")
            mine = weft_tables(weft, switches)
            after = differing(back, mine)
            # OpenSM's tables against weft's after the takeover: the blocks it had to rewrite.
            must = {(g, lid // 64) for g, lid, _, _ in differing(theirs, mine)}
            total = sum(len(t) for t in mine.values())
            if after:
                failures.append("after the takeover %d of %d (switch, LID) entries read back on %d switches are not "
                                "weft's (before the takeover %d differed); the takeover sweep wrote %d LFT blocks, "
                                "read %d: %s" % (len(after), total, len({g for g, _, _, _ in after}), len(before),
                                                 summ["written"], summ["read"], show(after, names)))
            elif summ["written"] < len(must):
                failures.append("the takeover sweep wrote %d LFT blocks; %d held OpenSM's entries"
                                % (summ["written"], len(must)))
            else:
                print("4. every switch holds weft's table: %d of %d (switch, LID) entries equal (%d differed "
                      "before); %d LFT blocks written (%d held OpenSM's entries), %d read back"
                      % (total, total, len(before), summ["written"], len(must), summ["read"]))
            if problems:
                failures.append("after the takeover %d of %d routes wrong: %s" % (len(problems), pairs, problems[:3]))

            # 5. A link event: weft's sweep of the new topology leaves no loop.
            heavy1 = weft.api()["sweeps"]["heavy"]
            os.write(sim.fifo_fd, ('Unlink "%s"[%d]\n' % cut).encode())
            weft_swept(weft, heavy1, lambda s: s["last_sweep"]["links"] == links0 - 1, "after the Unlink")
            nodes, lfts5, pairs, problems = b.read_routes(work, sock)
            if sb.lids_of(nodes) != lids0:
                raise b.Failure("LIDs changed after the Unlink")
            if problems:
                failures.append("after Unlink %s[%d]: %d of %d (switch, LID) pairs route wrong: %s"
                                % (cut[0], cut[1], len(problems), pairs, problems[:5]))
            d = differing(lfts5, weft_tables(weft, switches))
            if d:
                failures.append("after Unlink %s[%d]: %d entries read back are not weft's: %s"
                                % (cut[0], cut[1], len(d), show(d, names)))
            if not problems and not d:
                print("5. Unlink %s[%d]: weft swept (%d links); all %d (switch, LID) pairs route without a loop "
                      "or a drop, every entry is weft's" % (cut[0], cut[1], links0 - 1, pairs))
        finally:
            osm.stop()
            weft.stop()
    if failures:
        raise b.Failure("\n".join(failures))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--topo", default=TOPO, help="another fat tree (weft topo spec, ft2 or ft3)")
    a = ap.parse_args()
    os.makedirs(a.scratch, exist_ok=True)
    users = sb.write_users(os.path.join(a.scratch, "takeover-users"))
    t0 = time.time()
    for attempt in range(1, ATTEMPTS + 1):
        try:
            one_run(a, users, attempt)
            break
        except Stuck as e:
            print("run %d: %s (OpenSM 3.3.23, handed over to from STANDBY); starting afresh" % (attempt, e))
            if attempt == ATTEMPTS:
                raise b.Failure("OpenSM never swept after the handover in %d runs" % ATTEMPTS)
    print("PASS takeover (%.1f s)" % (time.time() - t0))


if __name__ == "__main__":
    b.run_main(main)
