#!/usr/bin/env python3
"""The weft binary on good and bad input: exit codes, and errors that say where
and what. No fabric needed (the simulator runs in-process)."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

failures = []
checks = []


def check(name, args, rc, pattern, weft, cwd, env=None, timeout=120, prefix=()):
    try:
        p = subprocess.run([weft] + list(prefix) + args, cwd=cwd, capture_output=True, text=True,
                           timeout=timeout, env=env if env is not None else os.environ)
    except subprocess.TimeoutExpired:
        checks.append(name)
        failures.append(name)
        print("FAIL %s (no exit within %d s)" % (name, timeout))
        return
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
    check("no command", [], 2, r"Usage: weft COMMAND", W, w)
    check("version", ["--version"], 0, r"^weft \d+\.\d+\.\d+\n$", W, w)
    # Every command's help reads as a manual page: usage, description, options, exit status.
    for cmd in (["sm"], ["sim"], ["topo"], ["route"], ["config"], ["roce"], ["roce", "check"], ["roce", "render"],
                ["roce", "diff"], ["roce", "collect"], ["roce", "apply"]):
        name = " ".join(cmd)
        check("help: weft %s --help" % name, cmd + ["--help"], 0,
              r"^weft %s - .+\n\nUsage:\n  weft %s.*\n\n[A-Z].*\nExit status:\n  0 " % (name, name), W, w)
        if len(cmd) == 1:
            check("help: weft help %s" % name, ["help"] + cmd, 0, r"^weft %s - " % name, W, w)
    for cmd in ("sm", "sim", "topo", "route", "config", "roce check"):
        check("help: %s has examples" % cmd, cmd.split() + ["--help"], 0, r"\nExamples:\n  weft " + cmd, W, w)
    check("help: a bad option names the command", ["sim", "--frob"], 2,
          r"weft: sim: unrecognised option '--frob' \(weft sim --help\)", W, w)
    check("help --man: the manual's FILES, SEE ALSO, and every command in COMMANDS", ["help", "--man"], 0,
          r'^\[FILES\]\n.*\[SEE ALSO\]\n.*\[COMMANDS\]\n\.SS "weft sm"\n\.nf\n.*\.SS "weft sim".*\.SS "weft topo".*\.SS "weft route".*'
          r'\.SS "weft config".*\.SS "weft roce check".*\.SS "weft roce apply".*\.fi\n$', W, w)
    # The template of every option loads clean, commented or not.
    conf = os.path.join(w, "weft.conf")
    check("config template", ["config", "template", conf], 0, r"^$", W, w)
    text = open(conf).read()
    checks.append("config template: max_wire_smps at its default under its help")
    if not re.search(r"\n# SMPs outstanding .*\[1\.\.256\] \(SIGHUP applies it\)\n#max_wire_smps 64\n", text):
        failures.append(checks[-1])
        print("FAIL " + checks[-1])
    checks.append("config template: lmc needs a restart")
    if not re.search(r"\n# LID mask control: .*\[0\.\.7\]\n#lmc 0\n", text):
        failures.append(checks[-1])
        print("FAIL " + checks[-1])
    check("config template checks clean", ["config", "check", conf, "--strict"], 0,
          r": 0 options weft implements, 0 OpenSM options at OpenSM's default, 0 not implemented", W, w)
    uncommented = os.path.join(w, "weft-set.conf")
    open(uncommented, "w").write(re.sub(r"(?m)^#([a-z_]+ )", r"\1", text))
    check("config template, every default set, checks clean", ["config", "check", uncommented, "--strict"], 0,
          r": [1-9]\d+ options weft implements, 0 OpenSM options at OpenSM's default, 0 not implemented", W, w)
    open(os.path.join(w, "etcd.conf"), "w").write("state_store etcd://10.0.0.5:2379,10.0.0.6:2379/weft/a\n")
    check("config: the etcd state store", ["config", "check", os.path.join(w, "etcd.conf")], 0,
          r'state store: etcd \["10\.0\.0\.5:2379","10\.0\.0\.6:2379"\], prefix /weft/a/, lease 25 s', W, w)  # 2 x sweep_interval 10 + 5
    open(os.path.join(w, "etcd-bad.conf"), "w").write("state_store etcd://10.0.0.5/weft\n")
    check("config: a bad state_store names the file", ["config", "check", os.path.join(w, "etcd-bad.conf")], 1,
          r'error: .*etcd-bad\.conf.*state_store: .*expected etcd://HOST:PORT', W, w)
    # An opensm.conf as NVIDIA's SM writes one: its AR engine and its own options load.
    nv = os.path.join(w, "nvidia-opensm.conf")
    open(nv, "w").write("routing_engine ar_ftree\nar_mode 1\nshield_mode 0\nar_transport_mask 0x000A\n"
                        "virt_enabled 2\nsa_etm_max_num_mcgs 0\nhm_num_reboots 10\n")
    check("config: NVIDIA's SM's opensm.conf loads", ["config", "check", nv], 0,
          r'option "ar_mode" of NVIDIA.s SM is not implemented by weft.*'
          r": 2 options weft implements, 3 OpenSM options at OpenSM's default, 2 not implemented", W, w)
    check("sim: ar_ftree on switches without AR: static tables, said once", ["sim", "--topology",
          "ft2:leaves=4,spines=2,hosts=2", "--config", nv], 0,
          r"(?=.*SM-0058 routing_engine ar_ftree: NVIDIA's adaptive-routing engine names are their "
          r"static engines plus adaptive routing)(?=.*AR-0002 6 switches have no adaptive routing)"
          r"(?!(?:.*AR-0002){2})(?=.*SUBNET UP.*0 unreachable, 0 loops)", W, w)
    # Adaptive routing on switches that hold it (one without), two sweeps as JSON: AR on where
    # groups exist, every group port checked on what the switches hold, nothing rewritten after.
    check("sim: ar_ftree programs AR, JSON per sweep", ["sim", "--topology",
          "ft2:leaves=8,spines=4,hosts=4,links=2", "--ar-cap", "64", "--no-ar", "spine3",
          "--routing-engine", "ar_ftree", "--sweeps", "2", "--json"], 0,
          r'\{"ar":\{"enabled":11,"entries":[1-9]\d*,"group_blocks_written":[1-9]\d*,"groups_dropped":0,'
          r'"lft_blocks_written":[1-9]\d*,"static":1,"switches":11,"verified":true\}[^\n]*"routes_verified":true,'
          r'"smps":\d+,"subnet_up":true,"sweep":1[^\n]*\n'
          r'\{"ar":\{"enabled":11,"entries":[1-9]\d*,"group_blocks_written":0,"groups_dropped":0,'
          r'"lft_blocks_written":0,"static":1,"switches":11,"verified":true\}[^\n]*"sweep":2', W, w)
    # SR-IOV: every CA port with 8 VFs, each partitioned and brought to ACTIVE in the first
    # sweep; the second reads one attribute a port and writes nothing.
    check("sim: --vports, JSON per sweep", ["sim", "--topology", "ft2:leaves=2,spines=1,hosts=2",
          "--vports", "8", "--vports-lid-required", "3", "--sweeps", "2", "--json"], 0,
          r'"sweep":1[^\n]*"vports":\{"activated":32,"failures":0,"found":32,"pkey_blocks_written":32,'
          r'[^\n]*\n[^\n]*"sweep":2[^\n]*"vports":\{"activated":0,"failures":0,"found":32,'
          r'"pkey_blocks_written":0,', W, w)
    # What a sweep cost, SM and simulator apart: the parts add up, the per-SMP figure is the
    # SM's CPU over the SMPs, and the engine never held a step's LFT blocks queued whole.
    p = subprocess.run([W, "sim", "--topology", "ft3:pods=8,leaves=8,aggs=8,hosts=8,cores=8,radix=16",
                        "--json"], cwd=w, capture_output=True, text=True, timeout=120)
    checks.append("sim --json: the sweep's cost")
    try:
        j = json.loads(p.stdout.splitlines()[0])
        c = j["cost"]
        problems = []
        if p.returncode != 0 or not j["subnet_up"]:
            problems.append("rc %d, subnet_up %s" % (p.returncode, j["subnet_up"]))
        if not (c["sm_cpu_ms"] > 0 and c["simulator_ms"] > 0 and c["peak_rss_mib"] > 0):
            problems.append("a part is not positive")
        if abs(c["sm_cpu_ms"] + c["simulator_ms"] - c["cpu_ms"]) > 0.01:
            problems.append("SM + simulator != CPU")
        if abs(c["sm_ns_per_smp"] - c["sm_cpu_ms"] * 1e6 / j["smps"]) > 0.01:
            problems.append("ns per SMP is not the SM's CPU over the SMPs")
        if not 0 < c["peak_queued_smps"] < j["lft_blocks_written"]:
            problems.append("peak queued %s, LFT blocks %s" % (c["peak_queued_smps"], j["lft_blocks_written"]))
    except (ValueError, KeyError, IndexError) as e:
        problems = ["no cost in the JSON: %s" % e]
    print("%s sim --json: the sweep's cost%s" % ("FAIL" if problems else "ok  ", "" if not problems else ": " + "; ".join(problems)))
    if problems:
        failures.append("sim --json: the sweep's cost")
        print("    " + (p.stdout + p.stderr)[-1500:])
    check("sim: --vports out of range", ["sim", "--topology", "ft2:leaves=2,spines=1,hosts=2",
          "--vports", "128"], 2, r"--vports must be in 1\.\.127", W, w)
    # Congestion control on simulated CC agents (one node without): every other device
    # configured and read back as asked, then nothing sent; an opensm.conf's CC values
    # with a bad one is refused, naming its line.
    cc_conf = os.path.join(w, "cc.conf")
    with open(cc_conf, "w") as fh:
        fh.write("congestion_control TRUE\ncc_key 0x77\ncc_ca_cong_setting_control_map 0x1\n"
                 "cc_ca_cong_setting_ccti_timer 0 10\ncc_cct 0:0,0:2,0:4\n")
    check("sim: congestion control, JSON per sweep", ["sim", "--topology",
          "ft2:leaves=4,spines=2,hosts=3", "--cc-agents", "--no-cc", "h0-0", "--config", cc_conf,
          "--sweeps", "2", "--json"], 0,
          r'"cc":\{"cas":12,"configured":17,"failed":0,"locked":1,"mads":[1-9]\d*,'
          r'"mads_written":[1-9]\d*,"switches":6,"unavailable":0,"verified":false\}[^\n]*"sweep":1[^\n]*\n'
          r'.*"cc":\{"cas":12,"configured":17,"failed":0,"locked":1,"mads":1,"mads_written":0,', W, w)
    check("sim: congestion control without a key, JSON", ["sim", "--topology",
          "ft2:leaves=4,spines=2,hosts=3", "--cc-agents", "--no-cc", "h0-0", "--congestion-control",
          "--sweeps", "2", "--json"], 0,
          r'"cc":\{"cas":12,"configured":17,"failed":0,"locked":0,"mads":[1-9]\d*,"mads_written":[1-9]\d*,'
          r'"switches":6,"unavailable":1,"verified":true\}[^\n]*\n.*"cc":\{"cas":12,"configured":17,'
          r'"failed":0,"locked":0,"mads":0,"mads_written":0,"switches":6,"unavailable":1,"verified":true', W, w)
    # A hot spot: the eleven other hosts send to h0-0; switches mark (a threshold), the
    # logs rank leaf0's port into h0-0 first (11 flows), then the spine port into leaf0.
    hot_conf = os.path.join(w, "hot.conf")
    with open(hot_conf, "w") as fh:
        fh.write("congestion_control TRUE\ncc_sw_cong_setting_control_map 0xF\n"
                 "cc_sw_cong_setting_threshold 0xf\ncc_ca_cong_setting_control_map 0x1\n")
    check("sim --hotspot: the congestion logs rank the port into it first", ["sim", "--topology",
          "ft2:leaves=4,spines=2,hosts=3", "--cc-agents", "--config", hot_conf, "--hotspot", "h0-0",
          "--json"], 0,
          r'"congestion":\{"events":40,"flows":11,"ports":\[\{"log_events":11,"name":"leaf0","port":1\},'
          r'\{"log_events":9,"name":"spine0","port":1\}', W, w)
    check("sim --hotspot without congestion control is refused", ["sim", "--topology",
          "ft2:leaves=4,spines=2,hosts=3", "--hotspot", "h0-0"], 2,
          r"--hotspot needs congestion control", W, w)
    with open(cc_conf, "a") as fh:
        fh.write("cc_ca_cong_setting_ccti_min 16 1\n")
    check("config: a bad CC value names its line", ["config", "check", cc_conf], 1,
          r'error: .*cc\.conf:6: cc_ca_cong_setting_ccti_min: "16 1" is not SL VALUE', W, w)
    # Traffic through what the simulated switches hold: their LFTs, and their AR groups.
    check("sim --traffic: through what the switches hold", ["sim", "--topology",
          "ft2:leaves=8,spines=4,hosts=4", "--ar-cap", "64", "--routing-engine", "ar_ftree",
          "--traffic", "permutation", "--json"], 0,
          r'"traffic":\{"permutation":\{"adaptive":\{"blackholed_flows":0,"flows":32,'
          r'"max_link_flows":1\.0,"mean_flow_throughput":1\.0,"min_flow_throughput":1\.0\},'
          r'"static":\{"blackholed_flows":0,"flows":32,"max_link_flows":[2-9]', W, w)
    check("sim --traffic names its patterns", ["sim", "--topology", "ft2:leaves=2", "--traffic",
          "tornado"], 2, r'sim: --traffic: unknown traffic pattern "tornado"', W, w)
    check("sim: --no-ar names a switch", ["sim", "--topology", "ft2:leaves=2", "--no-ar", "h0-0"], 2,
          r'--no-ar: no switch named "h0-0"', W, w)
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
          r"minhop\s+ok\s+100\.000\s+0\s+2\s+2\.0\s+1\.000\s+1\.0000\s+1\s+1\s+ok", W, w)
    check("route --traffic: static beside adaptive per pattern", ["route", "--topology",
          "ft2:leaves=4,spines=2,hosts=2", "--engine", "ftree", "--traffic", "hotspot,shift", "--json",
          "--no-patterns"], 0,
          r'"traffic": \{\s*"hotspot": \{\s*"adaptive": \{\s*"blackholed_flows": 0,\s*"flows": 7,\s*'
          r'"max_link_flows": 7(\.0)?,.*"shift": \{.*"static": \{\s*"blackholed_flows": 0,\s*"flows": 8,\s*'
          r'"max_link_flows": 1(\.0)?,\s*"mean_flow_throughput": 1\.0', W, w)
    # A failed uplink, on the tables routed before it (until the SM reroutes): static tables
    # black-hole the flows that crossed it, adaptive routing with fast recovery none.
    check("route --traffic --fail-link: black-holed until the reroute", ["route", "--topology",
          "ft2:leaves=4,spines=2,hosts=2", "--engine", "ftree", "--traffic", "all-to-all", "--json",
          "--no-grade", "--fail-link", "leaf0:3"], 0,
          r'"traffic": \{\s*"all-to-all": \{\s*"adaptive": \{\s*"blackholed_flows": 0,\s*"flows": 56,.*'
          r'"static": \{\s*"blackholed_flows": [1-9]\d*,\s*"flows": 56,.*"traffic_rerouted": \{\s*'
          r'"all-to-all": \{\s*"adaptive": \{\s*"blackholed_flows": 0,', W, w)
    check("route --ar-rule names its words", ["route", "--topology", "ft2:leaves=2", "--traffic",
          "shift", "--ar-rule", "random"], 2, r'--ar-rule: "random" is not split or least-loaded', W, w)
    check("route --traffic: an unknown pattern is named", ["route", "--topology", "ft2:leaves=2",
          "--traffic", "tornado"], 2, r'unknown traffic pattern "tornado" \(known: shift', W, w)
    check("route --json", ["route", "--topology", "torus:dims=3x3,hosts=1", "--json"], 0,
          r'"compute_cpu_ms": \d+(\.\d+)?(e-?\d+)?,\s*"compute_ms": \d+(\.\d+)?(e-?\d+)?,\s*'
          r'"compute_sys_ms": \d+(\.\d+)?(e-?\d+)?,\s*"compute_user_ms": \d.*"engine": "minhop".*"reachable_pct": 100\.0.*'
          r'"status": "ok"', W, w)
    # The routing commands run themselves again with glibc's huge-page malloc where the
    # kernel gives transparent huge pages to who asks (app/main.cpp), under their own name;
    # a user's GLIBC_TUNABLES stands.
    thp_path = "/sys/kernel/mm/transparent_hugepage/enabled"
    thp = open(thp_path).read() if os.path.exists(thp_path) else "[never]"
    clean = {k: v for k, v in os.environ.items() if k not in ("GLIBC_TUNABLES", "LD_PRELOAD", "WEFT_RAN_AGAIN")}
    check("route runs with huge-page malloc where the kernel gives huge pages to who asks",
          ["route", "--topology", "ft2:leaves=2", "--json"], 0,
          r'"malloc_huge_pages": %s' % ("true" if "[madvise]" in thp else "false"), W, w, env=clean)
    if "[madvise]" in thp:
        # Run again under its own name (ps, pgrep, systemctl status show /proc/PID/comm).
        name = "sim keeps its name when it runs itself again"
        checks.append(name)
        sim = subprocess.Popen([W, "sim", "--topology", "ft3:pods=8,leaves=8,aggs=8,hosts=16,cores=8"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=clean)
        comm = None
        try:
            for _ in range(6000):  # bounded: the sim takes about a second
                if sim.poll() is not None:
                    break
                try:
                    environ = open("/proc/%d/environ" % sim.pid, "rb").read()
                    if b"glibc.malloc.hugetlb=1" in environ:  # the second start: named early
                        comm = open("/proc/%d/comm" % sim.pid).read().strip()
                        if comm == "weft":
                            break
                except OSError:
                    pass
                time.sleep(0.005)
        finally:
            sim.kill()
            sim.wait()
        ok = comm == "weft"
        print("%s %s (comm %r)" % ("ok  " if ok else "FAIL", name, comm))
        if not ok:
            failures.append(name)
    # Given file capabilities and run by another user, weft runs in glibc's secure mode,
    # which strips GLIBC_TUNABLES: it must not try to run itself again (it once did,
    # forever). The copy lives where that user can reach it.
    capdir = tempfile.mkdtemp(prefix="weft-cap-")
    try:
        os.chmod(capdir, 0o755)
        capped = os.path.join(capdir, "weft")
        shutil.copy2(W, capped)
        subprocess.run(["setcap", "cap_net_raw+ep", capped], check=True)
        check("route with file capabilities, run by an unprivileged user",
              ["route", "--topology", "ft2:leaves=2"], 0, r"minhop\s+ok", "setpriv", w, env=clean,
              timeout=60, prefix=["--reuid=65534", "--regid=65534", "--clear-groups", capped])
    finally:
        shutil.rmtree(capdir, ignore_errors=True)
    check("route: a user's glibc.malloc.hugetlb=0 stands", ["route", "--topology", "ft2:leaves=2", "--json"], 0,
          r'"malloc_huge_pages": false', W, w, env=dict(clean, GLIBC_TUNABLES="glibc.malloc.hugetlb=0"))
    # They keep the memory they free for the next sweep (app/main.cpp: keep_freed_memory);
    # a malloc setting the user names, in GLIBC_TUNABLES or glibc's older variables, stands,
    # and so do hugetlbfs pages (glibc maps those only apart).
    check("route keeps the memory it frees", ["route", "--topology", "ft2:leaves=2", "--json"], 0,
          r'"malloc_kept": \[\s*"arena_max",\s*"mmap_max",\s*"trim_threshold"\s*\]', W, w, env=clean)
    check("route: a user's MALLOC_ARENA_MAX stands", ["route", "--topology", "ft2:leaves=2", "--json"], 0,
          r'"malloc_kept": \[\s*"mmap_max",\s*"trim_threshold"\s*\]', W, w,
          env=dict(clean, MALLOC_ARENA_MAX="4"))
    check("route: hugetlbfs pages stay mapped apart", ["route", "--topology", "ft2:leaves=2", "--json"], 0,
          r'"malloc_kept": \[\s*"arena_max",\s*"trim_threshold"\s*\]', W, w,
          env=dict(clean, GLIBC_TUNABLES="glibc.malloc.hugetlb=2"))
    check("route tells minhop's torus cycle from updn", ["route", "--topology", "torus:dims=5x5,hosts=1",
          "--engine", "minhop,updn"], 0, r"minhop\s+ok.*\s1\s+CYCLE.*\nupdn\s+ok.*\s1\s+ok", W, w)
    check("route: ftree refuses a torus, and a chain falls back", ["route", "--topology", "torus:dims=4x4,hosts=1",
          "--engine", "ftree+updn"], 0,
          r"ftree,updn\s+ok.*\n  ftree refused \(topology\): ftree: not a fat tree: .*\n  routed by updn", W, w)
    check("route: a refusal alone fails", ["route", "--topology", "torus:dims=4x4,hosts=1", "--engine", "ftree"],
          1, r"ftree\s+refused\s+ftree: not a fat tree", W, w)
    check("route: ftree on a full tree is congestion-free for shifts, in one VL",
          ["route", "--topology", "ft3:pods=4,leaves=4,aggs=4,hosts=4,cores=4", "--engine", "ftree", "--json"], 0,
          r'"cdg_acyclic": true.*"engine": "ftree".*"shift_max_congestion": 1,.*"status": "ok".*"vls": 1', W, w)
    check("route: dfsssp layers a torus", ["route", "--topology", "torus:dims=4x4x4,hosts=1", "--engine",
          "dfsssp", "--json", "--no-patterns"], 0, r'"cdg_acyclic": true.*"vls": [2-8]\b', W, w)
    check("route: dfsssp refuses with too few VLs", ["route", "--topology", "torus:dims=4x4x4,hosts=1",
          "--engine", "dfsssp", "--max-vls", "2"], 1, r"dfsssp\s+refused\s+dfsssp: .*more than 2 VLs", W, w)
    check("route: failing a named link", ["route", "--topology", "ft2:leaves=2,spines=2,hosts=2", "--fail-link",
          "leaf0:3", "--progress"], 0, r'failed link "leaf0" .* port 3 -- "spine0"', W, w)
    check("route: failing an unknown switch", ["route", "--topology", "ft2:leaves=2", "--fail-switch", "nope"], 2,
          r'no node named "nope"', W, w)
    check("route: fault sweep", ["route", "--topology", "ft2:leaves=4,spines=2,hosts=2", "--engine", "ftree,updn",
          "--fault-sweep", "3", "--json"], 0, r'"failed_links": 3', W, w)
    # dor on a 5x5x5 torus with links failing (the generator's GUIDs: switch i is
    # 0x0002c90300001000 + i, x fastest): rings a failure broke are routed the long way
    # round, and rings split in two by turning early into a later dimension (the sweep's
    # fourth link splits one; dor refused there until it turned early; from the tenth
    # the labelling places switches whose squares all failed by their placed
    # neighbours; from the twentieth a z ring, the last dimension's, is split, and the
    # switches cut off step onto the line beside and back; at the 37th a y ring splits
    # where the z link toward the destination failed too, and the route takes the other
    # z side); with the seed given by its - links and a dateline, as torus-2QoS.conf
    # allows.
    conf = os.path.join(w, "torus555.conf")
    with open(conf, "w") as fh:
        fh.write("torus 5T 5 5  # a 3-D torus\n"
                 "xm_link 0x0002c90300001000 0x0002c90300001004\n"
                 "ym_link 0x0002c90300001000 0x0002c90300001014\n"
                 "zm_link 0x0002c90300001000 0x0002c90300001064\n"
                 "x_dateline 0\nport_order 1 2 3\n")
    check("route: dor routes a torus as links fail, where it refused at one",
          ["route", "--topology", "torus:dims=5x5x5,hosts=1", "--engine", "dor", "--torus", conf,
           "--fault-sweep", "37", "--no-patterns", "--json"], 0,
          r'(?s)"first_refusal": null.*"failed_links": 37,\s*"reachable_pct": 100\.0,\s*"status": "ok",\s*"vls": 4',
          W, w)
    check("route: dor routes round a failed switch (torus-2QoS's early turn)",
          ["route", "--topology", "torus:dims=5x5x5,hosts=1", "--engine", "dor", "--torus", conf,
           "--fail-switch", "sw2-2-2", "--no-patterns"], 0,
          r"(?s)dor\s+ok\s+100\.000\s+0 .*1 switch\(es\) and 0 link\(s\) of the shape missing; \d+ switch-to-switch "
          r"route\(s\) take the long way round a broken ring, \d+ turn early round a gap", W, w)
    lfts = os.path.join(w, "ftree.lfts")
    check("route --write-lfts", ["route", "--topology", "ft2:leaves=3,spines=2,hosts=2", "--engine", "ftree",
          "--write-lfts", lfts], 0, r"ftree\s+ok", W, w)
    check("route --lfts grades a written dump as the engine's own tables",
          ["route", "--topology", "ft2:leaves=3,spines=2,hosts=2", "--engine", "ftree", "--lfts", "dump=" + lfts],
          0, r"ftree\s+ok\s+(100\.000\s+0\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+\d+\s+\d+\s+ok)\s.*\n"
          r"dump\s+ok\s+\1\s", W, w)
    with open(os.path.join(w, "bad.lfts"), "w") as fh:
        fh.write("Unicast lids [0x0-0x3] of switch Lid 1 guid 0x0002c90300001000 (leaf0):\n0x0001 077 : x\n")
    check("route --lfts: a bad port names the line", ["route", "--topology", "ft2:leaves=3,spines=2,hosts=2",
          "--lfts", os.path.join(w, "bad.lfts")], 2, r"bad\.lfts:2: port 77 but .*leaf0", W, w)
    with open(os.path.join(w, "roots.txt"), "w") as fh:
        fh.write("# roots\n0x0002c90300001002\nspine\n")
    with open(os.path.join(w, "root.txt"), "w") as fh:
        fh.write("0x0002c90300001002  # spine0\n")
    check("sim: updn from a root GUID file", ["sim", "--topology", "ft2:leaves=2,spines=2,hosts=2",
          "--routing-engine", "updn", "--root-guids", os.path.join(w, "root.txt")], 0,
          r"routing: updn: 1 root\(s\).*SUBNET UP", W, w)
    check("sim: a bad root GUID file names file:line", ["sim", "--topology", "ft2:leaves=2,spines=2,hosts=2",
          "--routing-engine", "updn", "--root-guids", os.path.join(w, "roots.txt")], 2,
          r"roots\.txt:3: expected a GUID", W, w)
    check("sim: a chain falls back and says why", ["sim", "--topology", "torus:dims=3x3,hosts=1",
          "--routing-engine", "ftree,updn"], 0,
          r"routing: ftree refused \(topology\): ftree: not a fat tree.*SUBNET UP", W, w)
    check("route --root-guids: a bad line", ["route", "--topology", "ft2:leaves=2,spines=2,hosts=2", "--engine",
          "updn", "--root-guids", os.path.join(w, "roots.txt")], 2, r'roots\.txt:3: expected a GUID', W, w)
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
