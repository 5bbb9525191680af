#!/usr/bin/env python3
"""Taking the fabric back: an SM that was master, then stood by while another SM (of
another routing engine) programmed the fabric, becomes master again when that SM
dies (kill -9). weft (issue 40: a new master trusts nothing it cached; it reads back
every LFT block below each switch's LinearFDBTop and writes only those that differ)
against OpenSM 3.3.23, on ibsim's 444-switch fat tree (3,456 CAs); sminfo polling as
bench_failover.py (2000 ms, 2 retries), sweep_interval 10 s for both.

Each run of a scenario: a fresh ibsim, the two SMs at the first and the last host
(SIM_HOST), each under the madcount shim (bench/madcount.cpp, in front of umad2sim:
the SMPs that left each SM's process, counted the same way for both).
- weft takes back: weft (priority 1, minhop) brings the subnet up; OpenSM (priority
  5, updn) joins, weft hands over, OpenSM sweeps and programs its updn tables (read
  back: they must differ from weft's); then OpenSM gets kill -9 and weft takes over.
- OpenSM takes back: the mirror, OpenSM (1, minhop) first, weft (5, updn) takes over
  and programs, weft gets kill -9 and OpenSM takes over.
Measured for the SM taking back:
- the wall time from the kill to its next SUBNET UP (logs polled every 20 ms; this
  holds the unanswered polls before it takes over), and from its own log line that
  the master is gone to that SUBNET UP (the takeover sweep alone, the log's times);
- the SMP requests (Gets and Sets, not answers) it sent from the kill to the SUBNET
  UP, by kind, among them the LFT block Sets (shim); weft's summary of the takeover
  sweep gives its SMPs too, and the LFT blocks it read back (OpenSM's log does not).
Then the tables are read back (ibnetdiscover, dump_fts): every (switch, LID) must
route without a loop, and they should be the taker's own minhop tables again
(entries differing from its first bring-up are reported). Printed beside: the LFT
blocks the other SM's tables changed, and the fabric's LFT blocks (switches x blocks
up to each LinearFDBTop); a Get and a Set cost one SMP each, so read-then-write
costs blocks + differing, write-all costs blocks. The scenarios take turns, run by
run. OpenSM beside weft sometimes stops sweeping for good (see Sm.up): such a run
is started afresh (at most 3 times) and counted.
Usage: bench_takeover.py --weft BUILD/app/weft --shim BUILD/bench/libweft_madcount.so
       [--runs N] [--small]"""
import argparse
import os
import re
import shutil
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, HERE)
import ibsim_bringup as b  # noqa: E402
import ibsim_standby as sb  # noqa: E402
from bench_bringup import ibsim_args  # noqa: E402
from bench_failover import hosts  # noqa: E402
from bench_reroute import blocks_changed, counts, delta, entries_differing, quiet  # noqa: E402

SPEC = "ft3:pods=8,leaves=24,aggs=18,hosts=18,cores=6,links=2"  # 444 switches, 3,456 CAs
SMALL = "ft3:pods=2,leaves=4,aggs=4,hosts=4,cores=2,links=1"     # 24 switches, 32 CAs
POLL_MS, RETRIES = 2000, 2
SWEEP_S = 10
LOW, HIGH = 1, 5
SCENARIOS = ("weft", "opensm")  # the SM that takes back
STALL_S = 20   # an OpenSM that sent no SMP request for this long without a SUBNET UP is stuck
ATTEMPTS = 3   # runs of a scenario started afresh when OpenSM got stuck


class Stuck(b.Failure):
    pass


class Sm(sb.Sm):
    """ibsim_standby's SM with a routing engine, sweep_interval SWEEP_S, the madcount
    shim in front of umad2sim and weft's stdout (its sweep summaries) in a file."""

    def __init__(self, kind, name, host, prio, work, sock, a, engine):
        super().__init__(kind, name, host, prio, work, sock, a.weft, a.users, engine)
        self.counts = os.path.join(self.dir, "counts")
        self.preload = a.shim + " " + b.UMAD2SIM
        self.env = {"WEFT_MADCOUNT": self.counts}
        i = self.cmd.index("--sweep-interval" if kind == "weft" else "-s")
        self.cmd[i + 1] = str(SWEEP_S)

    def ups(self):
        return len(re.findall(r"SUBNET UP", self.text()))

    def up(self, more_than, timeout):
        """Until a SUBNET UP after the first `more_than` (the log polled every 20 ms);
        the time it showed. OpenSM 3.3.23 beside weft sometimes stops sending SMPs
        for good, its MAD thread still answering the other SM's polls: handed over to
        from STANDBY it logs "Entering MASTER state" and never sweeps, or it ignores the
        handover, stands by and then stays DISCOVERING (weft, outranked, waits for it:
        no master at all). Here about 1 run in 10 on the small tree; SIGHUP does not wake
        it. No SMP request from OpenSM for STALL_S s (a standby polls every 2 s) without
        the SUBNET UP raises Stuck."""
        deadline = time.time() + timeout
        last, since = -1, time.time()
        while self.ups() <= more_than:
            if self.proc.poll() is not None:
                raise b.Failure("%s exited %s:\n%s" % (self.name, self.proc.returncode, self.text()[-2500:]))
            if self.kind == "opensm":
                c = counts(self.counts) if os.path.exists(self.counts) else {"gets": 0, "sets": 0}
                now = c["gets"] + c["sets"]  # its own requests: not its answers to the other SM's polls
                if now != last:
                    last, since = now, time.time()
                elif time.time() - since >= STALL_S:
                    states = re.findall(r"Entering (\w+) state", self.text())
                    raise Stuck("OpenSM (%s) has sent no SMP request for %d s, no SUBNET UP"
                                % (states[-1] if states else "no state yet", STALL_S))
            if time.time() > deadline:
                raise b.Failure("%s: no SUBNET UP in %d s:\n%s" % (self.name, timeout, self.text()[-2500:]))
            time.sleep(0.02)
        return time.time()


def stamp(line):
    """A log line's time, seconds of the day: weft's ISO time or OpenSM's 'Mon DD HH:MM:SS usec'."""
    m = re.search(r"(\d\d):(\d\d):(\d\d)(?:[.,](\d+)| (\d{6}) )", line)
    if not m:
        return None
    frac = m.group(4) or m.group(5)
    return int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3)) + int(frac) / 10 ** len(frac)


def sweep_seconds(sm, text_before):
    """From the taker's log line that the master is gone (weft's SM-0054 "is gone:
    taking over", OpenSM's "Entering DISCOVERING state" after its last unanswered poll)
    to its SUBNET UP, both written after `text_before` (the log as it was at the kill)."""
    new = sm.text()[len(text_before):].splitlines()
    gone = r"is gone: taking over" if sm.kind == "weft" else r"Entering DISCOVERING state"
    t_gone = next((stamp(l) for l in new if re.search(gone, l)), None)
    t_up = next((stamp(l) for l in new if "SUBNET UP" in l), None)
    if t_gone is None or t_up is None:
        raise b.Failure("%s: no %r and SUBNET UP with times in its log after the kill:\n%s"
                        % (sm.kind, gone, "\n".join(new[:40])))
    return (t_up - t_gone) % 86400


def weft_summary(sm, out_before):
    """The first summary weft printed as master after `out_before` (its stdout at the
    kill): the takeover sweep's SMPs and LFT blocks."""
    body = sm.master_summary(out_before)
    smps = re.search(r"SMPs\s+discovery (\d+), programming (\d+), activation (\d+), total (\d+)", body)
    lft = re.search(r"(\d+) LFT blocks \((\d+) read, (\d+) spot-checked, (\d+) switches found changed\)", body)
    tables = re.search(r"P_Key blocks (\d+) written \((\d+) read\).*SL2VL (\d+) written \((\d+) read\); VLArb blocks "
                       r"(\d+) written \((\d+) read\)", body)
    ms = re.search(r"time ms\s+(.*)", body)
    mads = re.search(r"MADs\s+(.*)", body)
    if not smps or not lft or not tables:
        raise b.Failure("weft's summary lacks the SMPs, LFT or tables line:\n" + body)
    return {"smps": int(smps.group(4)), "discovery": int(smps.group(1)), "program": int(smps.group(2)),
            "activate": int(smps.group(3)), "written": int(lft.group(1)), "read": int(lft.group(2)),
            "checked": int(lft.group(3)), "sw_changed": int(lft.group(4)),
            "new_term": "a new master term" in body, "pkey_read": int(tables.group(2)),
            "pkey_written": int(tables.group(1)), "other_read": int(tables.group(4)) + int(tables.group(6)),
            "other_written": int(tables.group(3)) + int(tables.group(5)),
            "ms": ms.group(1) if ms else "", "mads": mads.group(1) if mads else ""}


def routes(work, sock, what, strict=True):
    """The LFTs read back; with `strict`, every (switch, LID) must route without a loop.
    Else (the updn tables of the SM that took over: on these multi-plane trees a core
    switch's LID has no up*-down* path from another plane's switches) the number of
    (switch, LID) pairs that do not route is returned beside them."""
    nodes, lfts, pairs, problems = b.read_routes(work, sock)
    if problems and (strict or any("not routed" not in p for p in problems)):
        raise b.Failure("%s: %d of %d routes wrong, e.g. %s" % (what, len(problems), pairs, problems[:3]))
    return lfts if strict else (lfts, len(problems))


def fabric_blocks(lfts):
    """LFT blocks below (and holding) each switch's LinearFDBTop, summed over the switches."""
    return sum(top // 64 + 1 for _, _, top in lfts.values())


def master_is(work, sock, net, sm):
    """sminfo from a third host names `sm`'s port as master (within 10 s)."""
    want = sb.port_guid_of(work, sock, sm.host)
    deadline = time.time() + 10
    while True:
        info = b.run(["sminfo"], work, sock, env={"SIM_HOST": hosts(net)[1]}, check=False).stdout
        m = re.search(r"sm guid 0x([0-9a-f]+).*SMINFO_MASTER", info)
        if m and int(m.group(1), 16) == want:
            return
        if time.time() > deadline:
            raise b.Failure("the master should be the %s at %s; sminfo says: %s" % (sm.kind, sm.host, info))
        time.sleep(0.2)


def one_run(a, net, sargs, taker, k):
    """`taker` ("weft" or "opensm") is master first (minhop), the other SM outranks it
    (updn) and programs, is killed, and `taker` takes back."""
    other = "opensm" if taker == "weft" else "weft"
    work = os.path.join(a.scratch, "%s-%d" % (taker, k))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    sock = "weft-bench-takeover-%d-%s-%d" % (os.getpid(), taker, k)
    sb.POLL_MS, sb.RETRIES = POLL_MS, RETRIES
    hs = hosts(net)
    with b.Ibsim(net, work, sock, extra_args=sargs):
        time.sleep(1)
        first = Sm(taker, "first", hs[0], LOW, work, sock, a, "minhop")
        second = Sm(other, "second", hs[-1], HIGH, work, sock, a, "updn")
        try:
            first.start()
            first.up(0, 600)
            quiet(first)
            own = routes(work, sock, "%s's bring-up" % taker)
            # The higher SM joins: the master hands over, the newcomer sweeps and programs.
            t0 = time.time()
            second.start()
            second.up(0, 600)
            first.wait(r"STANDBY" if taker == "weft" else r"Entering STANDBY state", 1, 120)
            quiet(second)
            handover = time.time() - t0
            theirs, unrouted = routes(work, sock, "%s's tables after the handover" % other, strict=False)
            changed = blocks_changed(own, theirs)
            if changed == 0:
                raise b.Failure("%s programmed no LFT block of its own after the handover: nothing to take back"
                                % other)
            master_is(work, sock, net, second)
            time.sleep(2)
            # kill -9 of the master: the first one takes back.
            log0, out0, c0 = first.text(), first.stdout(), counts(first.counts)
            ups, t0 = first.ups(), time.time()
            second.kill9()
            took = first.up(ups, 600) - t0
            c1 = counts(first.counts)
            quiet(first)
            c2 = counts(first.counts)
            sweep = sweep_seconds(first, log0)
            back = routes(work, sock, "%s's takeover" % taker)
            master_is(work, sock, net, first)
            d, after = delta(c0, c1), delta(c1, c2)
            r = {"took": took, "sweep": sweep, "smps": d["gets"] + d["sets"], "gets": d["gets"],
                 "portinfo_sets": d["portinfo_sets"], "switchinfo_sets": d["switchinfo_sets"],
                 "other_sets": d["other_sets"], "lft_sets": d["lft_sets"], "sets": d["sets"],
                 "late_lft_sets": after["lft_sets"], "changed": changed,
                 "rewritten": blocks_changed(theirs, back), "not_own": entries_differing(own, back),
                 "blocks": fabric_blocks(theirs), "switches": len(theirs), "handover": handover,
                 "unrouted": unrouted}
            if taker == "weft":
                r["summary"] = weft_summary(first, out0)
            return r
        finally:
            second.stop()
            first.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--shim", required=True, help="libweft_madcount.so")
    ap.add_argument("--scratch", default="/tmp/weft-bench-takeover")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--small", action="store_true", help="a 24-switch tree (%s), for a quick try" % SMALL)
    a = ap.parse_args()
    a.weft, a.shim = os.path.abspath(a.weft), os.path.abspath(a.shim)
    spec = SMALL if a.small else SPEC
    shutil.rmtree(a.scratch, ignore_errors=True)
    os.makedirs(a.scratch)
    a.users = sb.write_users(os.path.join(a.scratch, "users"))
    net = os.path.join(a.scratch, "ft3.net")
    b.run([a.weft, "topo", spec, "-o", net], a.scratch, "", preload=False)
    sargs, nsw, nca = ibsim_args(net)
    t_start = time.time()
    res = {t: [] for t in SCENARIOS}
    stuck = []
    for k in range(a.runs):
        for taker in SCENARIOS:
            for attempt in range(ATTEMPTS):
                try:
                    r = one_run(a, net, sargs, taker, k)
                    break
                except Stuck as e:
                    stuck.append("run %d, %s takes back: %s" % (k + 1, taker, e))
                    print("run %d %-6s takes back: %s; started afresh" % (k + 1, taker, e), flush=True)
            else:
                raise b.Failure("OpenSM stuck %d times in a row" % ATTEMPTS)
            res[taker].append(r)
            extra = ""
            if "summary" in r:
                s = r["summary"]
                extra = ("; weft's summary: %d SMPs (discovery %d, programming %d, activation %d), LFT blocks "
                         "%d read, %d written, %d switches found changed%s; P_Key blocks %d read, %d written; "
                         "SL2VL+VLArb %d read, %d written; time ms %s; MADs %s"
                         % (s["smps"], s["discovery"], s["program"], s["activate"], s["read"], s["written"],
                            s["sw_changed"], ", new term" if s["new_term"] else ", NOT a new term", s["pkey_read"],
                            s["pkey_written"], s["other_read"], s["other_written"], s["ms"], s["mads"]))
            print("run %d %-6s takes back: kill -> SUBNET UP %.2f s, master gone -> SUBNET UP %.3f s, %d SMPs, "
                  "%d LFT Sets (+%d after the SUBNET UP); %d blocks the other SM changed, %d rewritten, "
                  "%d entries not its own; handover took %.1f s, %d (switch, LID) pairs the other SM left unrouted%s"
                  % (k + 1, taker, r["took"], r["sweep"], r["smps"], r["lft_sets"], r["late_lft_sets"],
                     r["changed"], r["rewritten"], r["not_own"], r["handover"], r["unrouted"], extra), flush=True)
    runtime = time.time() - t_start

    def med(taker, key):
        return statistics.median(r[key] for r in res[taker])

    def smed(key):
        return statistics.median(r["summary"][key] for r in res["weft"])

    name = {"weft": "weft (minhop) after OpenSM (updn)", "opensm": "OpenSM (minhop) after weft (updn)"}
    print()
    print("Taking the fabric back on the %s tree (%d switches, %d CAs): the master (updn) gets kill -9, the SM "
          "that was master before it (minhop) takes back; sminfo_polling_timeout %d ms, polling_retry_number %d, "
          "sweep_interval %d s; medians of %d runs; the bench ran %.0f s"
          % (spec, nsw, nca, POLL_MS, RETRIES, SWEEP_S, a.runs, runtime))
    print()
    print("| SM taking back | kill -> SUBNET UP, s | master found gone -> SUBNET UP, ms | SMPs sent | LFT blocks read "
          "| LFT blocks written | blocks the other SM changed | entries not its own after |")
    print("|---|---|---|---|---|---|---|---|")
    for t in SCENARIOS:
        read = "%d" % smed("read") if t == "weft" else "not reported"
        print("| %s | %.2f | %.0f | %d | %s | %d | %d | %d |"
              % (name[t], med(t, "took"), 1000 * med(t, "sweep"), med(t, "smps"), read, med(t, "lft_sets"),
                 med(t, "changed"), med(t, "not_own")))
    print("| weft / OpenSM | %.2f | %.2f | %.2f | | %s | | |"
          % (med("weft", "took") / med("opensm", "took"), med("weft", "sweep") / med("opensm", "sweep"),
             med("weft", "smps") / med("opensm", "smps"),
             "%.2f" % (med("weft", "lft_sets") / med("opensm", "lft_sets")) if med("opensm", "lft_sets") else "-"))
    print()
    print("| SM taking back, SMPs from the kill to the SUBNET UP | Gets | Sets | LFT Sets | PortInfo Sets "
          "| SwitchInfo Sets | other Sets |")
    print("|---|---|---|---|---|---|---|")
    for t in SCENARIOS:
        print("| %s | %d | %d | %d | %d | %d | %d |"
              % (name[t], med(t, "gets"), med(t, "sets"), med(t, "lft_sets"), med(t, "portinfo_sets"),
                 med(t, "switchinfo_sets"), med(t, "other_sets")))
    blocks = med("weft", "blocks")
    print()
    print("SMPs sent (Gets and Sets) and LFT blocks written: the madcount shim, from the kill to the SUBNET UP "
          "(the standby's polls included). weft's own summary of its takeover sweep: %d SMPs (discovery %d, "
          "programming %d, "
          "activation %d), LFT blocks %d read, %d written, %d spot-checked, %d switches found changed; P_Key blocks "
          "%d read, %d written; SL2VL and VLArb %d read, %d written."
          % (smed("smps"), smed("discovery"), smed("program"), smed("activate"), smed("read"), smed("written"),
             smed("checked"), smed("sw_changed"), smed("pkey_read"), smed("pkey_written"), smed("other_read"),
             smed("other_written")))
    print("The fabric holds %d LFT blocks (%d switches, blocks up to each LinearFDBTop). Read-then-write: "
          "%d Gets + %d Sets = %d SMPs for the LFTs; write-all: %d Sets (weft / write-all %.2f)."
          % (blocks, med("weft", "switches"), smed("read"), smed("written"), smed("read") + smed("written"),
             blocks, (smed("read") + smed("written")) / blocks if blocks else 0))
    print("OpenSM stuck (no SMP request for %d s, no SUBNET UP), runs started afresh: %d%s"
          % (STALL_S, len(stuck), "".join("\n  " + x for x in stuck)))
    for t in SCENARIOS:
        print("%s: per run, LFT Sets %s, blocks changed by the other SM %s, entries not its own after %s, "
              "LFT Sets after the SUBNET UP %s"
              % (t, [r["lft_sets"] for r in res[t]], [r["changed"] for r in res[t]],
                 [r["not_own"] for r in res[t]], [r["late_lft_sets"] for r in res[t]]))


if __name__ == "__main__":
    b.run_main(main)
