#!/usr/bin/env python3
"""Reroute after a link failure, weft against OpenSM 3.3.23, in one run on ibsim's
444-switch fat tree (3,456 CAs), both with the same engine: minhop (their default),
updn, ftree and dfsssp (weft repairs its previous tables with each; OpenSM's unicast
cache covers minhop and updn). The bring-up before the cuts is measured too: time to
the first SUBNET UP and the SMPs until the SM's writes stop (dfsssp's layers add an
SL2VL table per switch input and output port pair on ibsim, whose switches take no
all-ports Sets).

Each run, per SM: a fresh ibsim; the SM at the first host brings the subnet up; the
routes are read back (ibnetdiscover, dump_fts) and checked; then a leaf-aggregation
link is cut with ibsim's `Unlink` (ibsim sends trap 128 to the SM). Measured:
- reroute time: from the Unlink to the SM's next SUBNET UP in its log (logs polled
  every 10 ms); after it the routes are read back and must reach every LID without a
  loop and without the cut link;
- LFT blocks written: SMP Sets of LinearForwardingTable that left the SM's process,
  counted by the madcount shim in front of umad2sim (the same count for both SMs),
  against the blocks whose content changed (the read-back tables before and after);
- the same when the link comes back (`ReLink`), and whether every LFT entry is then as
  it was before the cut (the balanced routes return).
The kinds take turns, run by run.

--huge: such cuts on the radix-56 3-level tree (3,920 switches, 43,904 CAs, 47,824
LIDs), weft alone (OpenSM takes minutes to bring it up and route it; its figure is the
444-switch tree's): two leaf-aggregation links in two pods, one after the other. The
first reroute after the bring-up also grows the SM's memory to its working size (the
snapshot the switches hold and the one being built, side by side); the second shows
a reroute after that. Its 187 M LFT entries are not read back whole (dump_fts would
take longer than the bring-up, and parsing them longer still); instead `ibroute` reads
back the two switches of each cut link, whose tables must send nothing over it and
route every LID, and weft's own note says how many (switch, LID) entries changed. The
SM checks every table (complete, loop-free, deadlock-free) before it writes any.
weft runs with glibc.malloc.hugetlb=1, which `weft sm` gives itself where no library is
preloaded (umad2sim is)."""
import argparse
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, HERE)
import ibsim_bringup as b  # noqa: E402
from bench_bringup import ibsim_args  # noqa: E402

SPEC = "ft3:pods=8,leaves=24,aggs=18,hosts=18,cores=6,links=2"  # 444 switches, 3,456 CAs
CUT = ('"leaf5-7"', 20)  # a leaf-aggregation link, away from the SM's own leaf
HUGE_SPEC = "ft3:pods=56,leaves=28,aggs=28,hosts=28,cores=28,radix=56"
# Leaf-aggregation links (ports 1-28 hosts, 29-56 aggregation switches), in two pods.
HUGE_CUTS = (('"leaf5-7"', 40), ('"leaf20-11"', 33))
SLOTS = ("smps", "gets", "sets", "lft_sets", "portinfo_sets", "switchinfo_sets", "other_sets")


def counts(path):
    data = open(path, "rb").read()
    return dict(zip(SLOTS, struct.unpack("<%dQ" % len(SLOTS), data[:8 * len(SLOTS)])))


def delta(a, c):
    return {k: c[k] - a[k] for k in SLOTS}


def blocks_changed(before, after):
    """LFT blocks (64 LIDs of one switch) whose entries differ between two read-backs."""
    changed = 0
    for guid in set(before) | set(after):
        t0 = before.get(guid, (None, {}, 0))[1]
        t1 = after.get(guid, (None, {}, 0))[1]
        blocks = {lid // 64 for lid in set(t0) | set(t1) if t0.get(lid) != t1.get(lid)}
        changed += len(blocks)
    return changed


def entries_differing(before, after):
    return sum(1 for g in before for lid, p in before[g][1].items() if after.get(g, (0, {}))[1].get(lid) != p)


class Sm:
    def __init__(self, kind, work, sock, host, weft, shim, engine):
        self.kind, self.work, self.sock, self.host = kind, work, sock, host
        self.log = os.path.join(work, kind + ".log")
        self.counts = os.path.join(work, kind + ".counts")
        if kind == "weft":
            self.cmd = [weft, "sm", "--state-dir", os.path.join(work, "state"), "--log-file", self.log,
                        "--sweep-interval", "10", "--routing-engine", engine]
        else:
            self.cmd = ["opensm", "-f", self.log, "-d", "2", "-s", "10", "-R", engine]
            if engine == "dfsssp":
                # As its man page says to run it ('-R dfsssp -Q'): without QoS OpenSM leaves
                # the SL2VL tables as they are, and the layers share VL 0.
                self.cmd.append("-Q")
        self.env = dict(os.environ, IBSIM_SOCKNAME=sock, LD_PRELOAD=shim + " " + b.UMAD2SIM, SIM_HOST=host,
                        WEFT_MADCOUNT=self.counts, OSM_TMP_DIR=work, OSM_CACHE_DIR=work)
        if kind == "weft":
            # The huge pages `weft sm` gives itself where no library is preloaded (app/main.cpp:
            # run_again_with_huge_pages); under umad2sim's preload it does not run itself again.
            self.env["GLIBC_TUNABLES"] = "glibc.malloc.hugetlb=1"
        self.proc = None

    def __enter__(self):
        self.proc = subprocess.Popen(self.cmd, cwd=self.work, env=self.env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        return self

    def __exit__(self, *exc):
        b.stop_process(self.proc)
        return False

    def ups(self):
        if not os.path.exists(self.log):
            return 0
        return len(re.findall(r"SUBNET UP", open(self.log, errors="replace").read()))

    def wait_up(self, more_than, timeout):
        t0 = time.time()
        while time.time() - t0 < timeout:
            if self.ups() > more_than:
                return time.time()
            if self.proc.poll() is not None:
                raise b.Failure("%s exited %d" % (self.kind, self.proc.returncode))
            time.sleep(0.01)
        raise b.Failure("%s: no SUBNET UP in %d s" % (self.kind, timeout))


def quiet(sm, settle=1.0, timeout=60):
    """Waits until the SM has sent no SMP Set for `settle` s (its sweep's writes done)."""
    t0, last, since = time.time(), counts(sm.counts)["sets"], time.time()
    while time.time() - t0 < timeout:
        time.sleep(0.1)
        now = counts(sm.counts)["sets"]
        if now != last:
            last, since = now, time.time()
        elif time.time() - since >= settle:
            return
    raise b.Failure("%s kept writing for %d s" % (sm.kind, timeout))


def checked(work, sock, what, strict=True):
    """The routes read back: every route to a CA's LID must be right (weft's; OpenSM's
    wrong ones are counted and shown). Routes to switch LIDs are counted apart
    (OpenSM's updn leaves the pairs no up*down* path joins unrouted; weft routes them)."""
    nodes, lfts, pairs, problems = b.read_routes(work, sock)
    switch_lids = {str(n["lid"]) for n in nodes.values() if n["type"] == "Switch"}
    to_switch = [p for p in problems if re.match(r"LID (\d+) ", p) and re.match(r"LID (\d+) ", p).group(1) in switch_lids]
    wrong = [p for p in problems if p not in set(to_switch)]
    if wrong and strict:
        raise b.Failure("%s: %d of %d routes wrong, e.g. %s" % (what, len(wrong), pairs, wrong[:3]))
    if wrong:
        print("%s: %d of %d (switch, CA LID) routes wrong, e.g. %s" % (what, len(wrong), pairs, wrong[:2]),
              flush=True)
    if to_switch:
        print("%s: %d (switch, switch LID) pairs unrouted" % (what, len(to_switch)), flush=True)
    return lfts


def one_run(a, net, sargs, kind, k, hosts, engine):
    work = os.path.join(a.scratch, "%s-%s-%d" % (kind, engine, k))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    sock = "weft-bench-reroute-%d-%s-%s-%d" % (os.getpid(), kind, engine, k)
    with b.Ibsim(net, work, sock, extra_args=sargs) as sim:
        time.sleep(1)
        with Sm(kind, work, sock, hosts[0], a.weft, a.shim, engine) as sm:
            t_up = time.time()
            up_s = sm.wait_up(0, 300) - t_up
            quiet(sm)
            out = {"up": dict(counts(sm.counts), s=up_s)}
            before = checked(work, sock, kind + " bring-up", kind == "weft")
            for step, cmd in (("cut", "Unlink %s[%d]\n" % CUT), ("back", "ReLink %s[%d]\n" % CUT)):
                c0, ups = counts(sm.counts), sm.ups()
                t0 = time.time()
                os.write(sim.fifo_fd, cmd.encode())
                t1 = sm.wait_up(ups, 120)
                quiet(sm)
                d = delta(c0, counts(sm.counts))
                lfts = checked(work, sock, "%s after %s" % (kind, cmd.strip()), kind == "weft")
                out[step] = {"s": t1 - t0, "lft_sets": d["lft_sets"], "sets": d["sets"], "smps": d["smps"],
                             "changed": blocks_changed(before if step == "cut" else out["cut_lfts"], lfts)}
                out[step + "_lfts"] = lfts
            out["restored"] = entries_differing(before, out["back_lfts"])
            return out


def guids_by_name(net):
    """Per switch name in an ibsim net file, its GUID (the switchguid line before it)."""
    out, guid = {}, None
    for line in open(net):
        m = re.match(r"switchguid=(0x[0-9a-fA-F]+)", line)
        if m:
            guid = m.group(1)
        m = re.match(r'Switch\s+\d+\s+"([^"]+)"', line)
        if m:
            out[m.group(1)] = guid
    return out


def peer_of(net, name, port):
    """(name, port) at the other end of switch `name`'s port in an ibsim net file."""
    inside = False
    for line in open(net):
        if line.startswith("Switch") or line.startswith("Ca"):
            inside = line.startswith("Switch") and ('"%s"' % name) in line
        elif inside:
            m = re.match(r'\[(\d+)\]\s+"([^"]+)"\[(\d+)\]', line)
            if m and int(m.group(1)) == port:
                return m.group(2), int(m.group(3))
    raise b.Failure("%s[%d] is linked to nothing in %s" % (name, port, net))


def ibroute_ports(work, sock, host, guid):
    """Per LID, the port `ibroute -n -G guid` reads back (-n: no look-up of each destination)."""
    out = b.run(["ibroute", "-n", "-G", guid], work, sock, env={"SIM_HOST": host}).stdout
    return {int(m.group(1), 16): int(m.group(2)) for m in re.finditer(r"^(0x[0-9a-f]+) (\d+) ", out, re.M)}


def peak_rss_mb(pid):
    """The process's peak resident set so far (VmHWM), in MB."""
    with open("/proc/%d/status" % pid) as f:
        m = re.search(r"^VmHWM:\s+(\d+) kB", f.read(), re.M)
    return int(m.group(1)) / 1024 if m else float("nan")


def huge_cut(a, sm, sim, work, sock, host, guids, net, cut, lids):
    """One Unlink on the running fabric: its reroute time, LFT Sets, the entries that
    changed (weft's note), and the cut link's two switches read back."""
    leaf, port = cut[0].strip('"'), cut[1]
    agg, agg_port = peer_of(net, leaf, port)
    c0, ups = counts(sm.counts), sm.ups()
    log_at = os.path.getsize(sm.log)
    t0 = time.time()
    os.write(sim.fifo_fd, ("Unlink %s[%d]\n" % cut).encode())
    t1 = sm.wait_up(ups, 600)
    quiet(sm, settle=2.0, timeout=600)
    d = delta(c0, counts(sm.counts))
    with open(sm.log, errors="replace") as f:
        f.seek(log_at)
        m = re.search(r"(\d+) \(switch, LID\) entries (?:whose routes crossed|changed)", f.read())
    rerouted = int(m.group(1)) if m else None
    over = 0
    routed = {}
    for name, cut_port in ((leaf, port), (agg, agg_port)):
        ports = ibroute_ports(work, sock, host, guids[name])
        routed[name] = len(ports)
        over += sum(1 for p in ports.values() if p == cut_port)
    if over or min(routed.values()) < lids:
        raise b.Failure("after the cut of %s[%d]: %d entries still over the cut link, LIDs routed %s of %d"
                        % (leaf, port, over, routed, lids))
    return {"s": t1 - t0, "lft_sets": d["lft_sets"], "smps": d["smps"], "rerouted": rerouted,
            "leaf": leaf, "port": port, "agg": agg}


def huge_run(a, hosts, net, sargs, engine):
    """weft on the radix-56 tree: bring-up, then the cuts one after the other."""
    work = os.path.join(a.scratch, "huge-%s" % engine)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    sock = "weft-bench-reroute-%d-huge-%s" % (os.getpid(), engine)
    guids = guids_by_name(net)
    with b.Ibsim(net, work, sock, extra_args=sargs) as sim:
        time.sleep(1)
        with Sm("weft", work, sock, hosts[0], a.weft, a.shim, engine) as sm:
            t_up = time.time()
            sm.wait_up(0, 3600)
            up_s = time.time() - t_up
            quiet(sm, settle=2.0, timeout=1800)
            up = counts(sm.counts)
            up["rss_mb"] = peak_rss_mb(sm.proc.pid)
            lids = len(ibroute_ports(work, sock, hosts[0], guids[HUGE_CUTS[0][0].strip('"')]))
            cuts = [huge_cut(a, sm, sim, work, sock, hosts[0], guids, net, c, lids) for c in HUGE_CUTS]
            return {"up_s": up_s, "up": up, "lids": lids, "cuts": cuts}


def huge(a):
    net = os.path.join(a.scratch, "ft56.net")
    b.run([a.weft, "topo", HUGE_SPEC, "-o", net], a.scratch, "", preload=False)
    hosts = re.findall(r'^Ca\s+\d+\s+"([^"]+)"', open(net).read(), re.M)
    sargs = ibsim_args(net)[0]
    rows = []
    for e in a.engines.split(","):
        r = huge_run(a, hosts, net, sargs, e)
        rows.append((e, r))
        print("%s: bring-up %.1f s, %d SMPs (%d Gets, %d Sets of tables other than LFT, PortInfo and "
              "SwitchInfo); %s" % (e, r["up_s"], r["up"]["smps"], r["up"]["gets"], r["up"]["other_sets"], "; ".join(
            "cut %s[%d]: %.3f s, %d LFT Sets, %s entries changed, %d SMPs"
            % (c["leaf"], c["port"], c["s"], c["lft_sets"], c["rerouted"], c["smps"]) for c in r["cuts"])),
            flush=True)
    print()
    print("Bring-up of the radix-56 tree, weft, one run: to the first SUBNET UP, and what went on the wire "
          "until the SM's writes stopped (other Sets: P_Key, SL2VL and VLArb tables, SMInfo)")
    print()
    print("| engine | to SUBNET UP, s | SMPs sent | Gets | other Sets | SM's peak RSS, MB |")
    print("|---|---|---|---|---|---|")
    for e, r in rows:
        print("| %s | %.1f | %d | %d | %d | %.0f |" % (e, r["up_s"], r["up"]["smps"], r["up"]["gets"],
                                                     r["up"]["other_sets"], r["up"]["rss_mb"]))
    print()
    print("Reroute on the radix-56 tree (3,920 switches, 43,904 CAs), weft, one run: two leaf-aggregation "
          "links cut one after the other (the first reroute after the bring-up also grows the SM's "
          "memory to its working size: the previous snapshot and the new one side by side)")
    print()
    print("| engine | cut | trap to SUBNET UP, ms | LFT blocks written | (switch, LID) entries changed "
          "| SMPs sent | both ends read back |")
    print("|---|---|---|---|---|---|---|")
    for e, r in rows:
        for k, c in enumerate(r["cuts"]):
            print("| %s | %s %s[%d] (to %s) | %.0f | %d | %s | %d | %d LIDs each, none over the cut link |"
                  % (e, ("first", "second")[k] if k < 2 else str(k + 1), c["leaf"], c["port"], c["agg"],
                     c["s"] * 1000, c["lft_sets"], c["rerouted"] if c["rerouted"] is not None else "-",
                     c["smps"], r["lids"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--shim", required=True, help="libweft_madcount.so")
    ap.add_argument("--scratch", default="/tmp/weft-bench-reroute")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--engines", default="minhop,updn,ftree,dfsssp", help="routing engines, each run by both SMs")
    ap.add_argument("--huge", action="store_true",
                    help="the radix-56 tree instead, weft alone, one run per engine (minutes each)")
    a = ap.parse_args()
    a.shim, a.weft = os.path.abspath(a.shim), os.path.abspath(a.weft)
    shutil.rmtree(a.scratch, ignore_errors=True)
    os.makedirs(a.scratch)
    if a.huge:
        return huge(a)
    net = os.path.join(a.scratch, "ft3.net")
    b.run([a.weft, "topo", SPEC, "-o", net], a.scratch, "", preload=False)
    hosts = re.findall(r'^Ca\s+\d+\s+"([^"]+)"', open(net).read(), re.M)
    sargs = ibsim_args(net)[0]
    engines = a.engines.split(",")
    res = {(e, kind): [] for e in engines for kind in ("weft", "opensm")}
    for k in range(a.runs):
        for e in engines:
            for kind in ("opensm", "weft"):
                r = one_run(a, net, sargs, kind, k, hosts, e)
                res[(e, kind)].append(r)
                print("run %d %-6s %-6s bring-up: %.3f s, %d SMPs, %d other Sets"
                      % (k + 1, e, kind, r["up"]["s"], r["up"]["smps"], r["up"]["other_sets"]), flush=True)
                print("run %d %-6s %-6s cut: %.3f s, %d LFT Sets / %d blocks changed, %d SMPs; back: %.3f s, "
                      "%d / %d, %d SMPs; entries not restored %d"
                      % (k + 1, e, kind, r["cut"]["s"], r["cut"]["lft_sets"], r["cut"]["changed"],
                         r["cut"]["smps"], r["back"]["s"], r["back"]["lft_sets"], r["back"]["changed"],
                         r["back"]["smps"], r["restored"]), flush=True)

    def med(e, kind, step, key):
        return statistics.median(r[step][key] for r in res[(e, kind)])

    print()
    print("Reroute on the 444-switch tree (3,456 CAs), link %s[%d] cut then restored; medians of %d runs"
          % (CUT[0].strip('"'), CUT[1], a.runs))
    print()
    print("| engine | event | SM | trap to SUBNET UP, ms | LFT blocks written | blocks changed | written/changed "
          "| SMPs sent | weft/OpenSM time |")
    print("|---|---|---|---|---|---|---|---|---|")
    for e in engines:
        for step, label in (("cut", "link cut"), ("back", "link back")):
            for kind in ("opensm", "weft"):
                w, c = med(e, kind, step, "lft_sets"), med(e, kind, step, "changed")
                ratio = "%.2f" % (med(e, "weft", step, "s") / med(e, "opensm", step, "s")) if kind == "weft" else ""
                print("| %s | %s | %s | %.0f | %d | %d | %s | %d | %s |"
                      % (e, label, "weft" if kind == "weft" else "OpenSM", med(e, kind, step, "s") * 1000, w, c,
                         "%.2f" % (w / c) if c else "-", med(e, kind, step, "smps"), ratio))
    print()
    print("Bring-up of the same tree, per engine (to the first SUBNET UP; SMPs until the SM's writes "
          "stopped; other Sets: P_Key, SL2VL and VLArb tables, SMInfo); medians of %d runs" % a.runs)
    print()
    print("| engine | SM | to SUBNET UP, ms | SMPs sent | Gets | other Sets | weft/OpenSM SMPs |")
    print("|---|---|---|---|---|---|---|")
    for e in engines:
        for kind in ("opensm", "weft"):
            ratio = ""
            if kind == "weft":
                ratio = "%.2f" % (med(e, "weft", "up", "smps") / med(e, "opensm", "up", "smps"))
            print("| %s | %s | %.0f | %d | %d | %d | %s |"
                  % (e, "weft" if kind == "weft" else "OpenSM", med(e, kind, "up", "s") * 1000,
                     med(e, kind, "up", "smps"), med(e, kind, "up", "gets"), med(e, kind, "up", "other_sets"),
                     ratio))
    for e in engines:
        for kind in ("opensm", "weft"):
            print("%s %s: LFT entries not back to their pre-cut port after the ReLink, per run: %s"
                  % (e, kind, [r["restored"] for r in res[(e, kind)]]))


if __name__ == "__main__":
    b.run_main(main)
