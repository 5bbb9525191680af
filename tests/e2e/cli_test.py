#!/usr/bin/env python3
"""The weft binary on good and bad input: exit codes, and errors that say where
and what. No fabric needed (the simulator runs in-process)."""
import argparse
import os
import re
import shutil
import subprocess
import sys

failures = []
checks = []


def check(name, args, rc, pattern, weft, cwd, env=None, timeout=120):
    p = subprocess.run([weft] + args, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                       env=env if env is not None else os.environ)
    out = p.stdout + p.stderr
    ok = p.returncode == rc and re.search(pattern, out, re.S)
    checks.append(name)
    print("%s %s (rc %d)" % ("ok  " if ok else "FAIL", name, p.returncode))
    if not ok:
        failures.append(name)
        print("    wanted rc %d and /%s/; got:\n%s" % (rc, pattern, out[-1500:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--scratch", required=True)
    a = ap.parse_args()
    w = a.scratch
    shutil.rmtree(w, ignore_errors=True)
    os.makedirs(w)
    W = a.weft
    check("no command", [], 2, r"usage: weft", W, w)
    check("unknown command", ["frobnicate"], 2, r'unknown command "frobnicate"', W, w)
    check("sim needs a topology", ["sim"], 2, r"--topology is required", W, w)
    check("sim brings up a fat tree", ["sim", "--topology", "ft2:leaves=4,spines=2,hosts=2"], 0,
          r"SUBNET UP.*0 unreachable, 0 loops", W, w)
    check("sim: a dead switch is a reason, not a crash", ["sim", "--topology", "ft2:leaves=4,spines=2,hosts=2",
          "--dead", "leaf1"], 1, r"subnet NOT up: .*did not answer", W, w)
    check("sim: lost SMPs are retried", ["sim", "--topology", "ft2:leaves=4,spines=2,hosts=2", "--drop-rate", "0.3",
          "--retries", "12"],
          0, r"SUBNET UP.*MADs     [1-9]\d* retried", W, w)
    check("sim: second sweep writes nothing", ["sim", "--topology", "torus:dims=3x3,hosts=1", "--sweeps", "2"], 0,
          r"writes   0 PortInfo, 0 SwitchInfo, 0 LFT blocks", W, w)
    check("sim: unknown node for --dead", ["sim", "--topology", "ft2:leaves=2", "--dead", "nope"], 2,
          r'no node named "nope"', W, w)
    check("sim: bad spec", ["sim", "--topology", "ft2:leaves=two"], 2, r'leaves="two" is not an integer', W, w)
    open(os.path.join(w, "bad.net"), "w").write('Switch 4 "s"\n[1] "h"[1]\n\nCa 1 "h"\n[1] "s"[9]\n')
    check("sim: bad topology file names file:line", ["sim", "--topology", os.path.join(w, "bad.net")], 2,
          r"bad\.net:5: remote port 9 > the 4 ports", W, w)
    open(os.path.join(w, "bad.conf"), "w").write("# weft\nmax_wire_smps 8\nmax_wire_smp 9\n")
    check("config: unknown key names file:line", ["sim", "--topology", "ft2:leaves=2", "--config",
          os.path.join(w, "bad.conf")], 2, r"bad\.conf:3: unknown option \"max_wire_smp\"", W, w)
    check("config: range", ["sim", "--topology", "ft2:leaves=2", "--window", "0"], 2,
          r"--window: max_wire_smps = 0 is outside 1..256", W, w)
    check("config: unknown engine", ["sim", "--topology", "ft2:leaves=2", "--routing-engine", "fastest"], 2,
          r'unknown routing engine "fastest"', W, w)
    check("bad log level", ["sim", "--topology", "ft2:leaves=2", "--log-level", "loud"], 2, r"--log-level", W, w)
    check("sim: switches too small for the LIDs", ["sim", "--topology", "ft2:leaves=20,spines=4,hosts=10",
          "--lft-cap", "128"], 1, r"NOT up: 24 switches cannot hold LIDs up to 224 \(LinearFDBCap\)", W, w)
    check("route grades an engine's tables", ["route", "--topology", "ft2:leaves=2,spines=2,hosts=2"], 0,
          r"minhop\s+ok\s+100\.000\s+0\s+2\s+2\.0\s+0\s+1\.000\s+2", W, w)
    check("route --json", ["route", "--topology", "torus:dims=3x3,hosts=1", "--json"], 0,
          r'"engine": "minhop".*"reachable_pct": 100\.0.*"status": "ok"', W, w)
    check("route --cdg tells minhop's torus cycle from updn", ["route", "--topology", "torus:dims=5x5,hosts=1",
          "--engine", "minhop,updn", "--cdg"], 0,
          r"minhop.*HAS A CYCLE.*updn\s+ok.*channel dependency graph: acyclic", W, w)
    check("route: unknown engine", ["route", "--topology", "ft2:leaves=2", "--engine", "minhop,nope"], 2,
          r'unknown routing engine "nope"', W, w)
    check("route: bad topology", ["route", "--topology", os.path.join(w, "bad.net")], 2, r"bad\.net:5:", W, w)
    net = os.path.join(w, "t.net")
    check("topo writes a net file", ["topo", "random:switches=12,degree=4,hosts=1,seed=5", "-o", net], 0,
          r"wrote .*12 switches, 12 CAs", W, w)
    check("the written net file is read back", ["sim", "--topology", net], 0, r"12 switches, 12 CAs", W, w)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "IBSIM_SOCKNAME")}
    check("sm without InfiniBand hardware fails fast", ["sm", "--once", "--state-dir", os.path.join(w, "st")], 1,
          r"weft: .*(no InfiniBand|umad)", W, w, env=env, timeout=30)
    print("%d passed, %d failed" % (len(checks) - len(failures), len(failures)))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
