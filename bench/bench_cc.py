#!/usr/bin/env python3
"""Congestion control on ibsim, OpenSM beside weft, with the same OpenSM-style CC options
(tests/e2e/ibsim_cc.py's): ibsim has no CC agent and answers class 0x21 from its SMP
handlers, so a CACongestionSetting Set lands in its P_Key table handler. Each SM runs once
with CC off and once with CC on, each on a fresh ibsim; every CA's P_Key table is read back
with smpquery, and the table counts the CAs whose table CC changed, and weft's CC MADs
(OpenSM does not log its count).

Usage: bench_cc.py --weft BUILD/app/weft [--spec ft2:...]
"""
import argparse
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import ibsim_bringup as b  # noqa: E402
import ibsim_cc  # noqa: E402


def opensm_conf(work, sock, cc):
    """OpenSM's own full option file (opensm -c) with the CC lines in place of its own."""
    base = os.path.join(work, "opensm-defaults.conf")
    if not os.path.exists(base):
        b.run(["opensm", "-c", base], work, sock, check=False, timeout=60)
    keys = {line.split()[0] for line in ibsim_cc.CC_CONF.strip().splitlines()}
    lines = [l for l in open(base).read().splitlines() if not (l.split() and l.split()[0] in keys)]
    path = os.path.join(work, "opensm-cc.conf")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n" + (ibsim_cc.CC_CONF if cc else ""))
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--spec", default=ibsim_cc.SPEC)
    ap.add_argument("--scratch", default="/tmp/weft-bench-cc")
    a = ap.parse_args()
    if not shutil.which("opensm"):
        sys.exit("opensm is not installed (scripts/install-deps.sh --bench)")
    shutil.rmtree(a.scratch, ignore_errors=True)
    os.makedirs(a.scratch)
    net = os.path.join(a.scratch, "fabric.net")
    b.run([a.weft, "topo", a.spec, "-o", net], a.scratch, "", preload=False)
    conf = os.path.join(a.scratch, "weft-cc.conf")
    open(conf, "w").write(ibsim_cc.CC_CONF)
    rows = []
    for sm in ("opensm", "weft"):
        tables = {}
        for cc in (False, True):
            work = os.path.join(a.scratch, "%s-%s" % (sm, "on" if cc else "off"))
            os.makedirs(work)
            sock = "weft-bench-cc-%s-%d-%d" % (sm, cc, os.getpid())
            with b.Ibsim(net, work, sock):
                if sm == "opensm":
                    log = os.path.join(work, "osm.log")
                    b.run(["opensm", "-o", "-f", log, "-F", opensm_conf(work, sock, cc)], work, sock,
                          check=False, timeout=600)
                    up = "SUBNET UP" in open(log, errors="replace").read()
                    mads = "not logged"
                else:
                    p = b.run([a.weft, "sm", "--once", "--state-dir", os.path.join(work, "state")]
                              + (["--config", conf] if cc else []), work, sock, check=False, timeout=600)
                    up = "SUBNET UP" in p.stderr
                    m = re.search(r"CC-0004 congestion control: .*; (\d+) MADs \((\d+) Sets\)", p.stderr)
                    mads = "%s (%s Sets)" % m.groups() if m else ("0" if not cc else "none logged")
                tables[cc] = ibsim_cc.pkey_tables(work, sock, ibsim_cc.ca_lids(work, sock))
            if cc:
                changed = sum(1 for lid, t in tables[True].items() if tables[False].get(lid) != t)
                example = ""
                for lid, t in tables[True].items():
                    was = tables[False].get(lid, "").splitlines()
                    diff = [l.strip() for i, l in enumerate(t.splitlines()) if i >= len(was) or was[i] != l]
                    if diff:
                        example = "LID %d: %s" % (lid, diff[0])
                        break
                rows.append((sm, up, changed, len(tables[True]), mads, example))
            print("%s, CC %s: done" % (sm, "on" if cc else "off"), file=sys.stderr)
    print("Fabric %s on ibsim; the same CC options for both (tests/e2e/ibsim_cc.py)." % a.spec)
    print()
    print("| SM | SUBNET UP with CC on | CA P_Key tables changed by CC | CC MADs sent | the first changed line |")
    print("|---|---|---|---|---|")
    for sm, up, changed, total, mads, example in rows:
        print("| %s | %s | %d of %d | %s | %s |" % (sm, "yes" if up else "no", changed, total, mads,
                                                 example or "(none)"))


if __name__ == "__main__":
    b.run_main(main)
