#!/usr/bin/env python3
"""Adaptive routing judged by its effect: flow-level traffic (weft's model, `weft route
--traffic`) on the same fabric and LIDs through OpenSM's tables (read back from ibsim
with dump_fts, static: OpenSM has no AR) and weft's, static and adaptive, in one run.

For each fabric (a full 3-level fat tree, and the same with inter-switch links taken
out): random permutations (--seeds of them, the busiest links summed, the slowest flows
averaged), all-to-all (the busiest link, the slowest flow), and one failed leaf uplink
before the SM reroutes (all-to-all flows black-holed: static tables against adaptive
routing with fast recovery). Adaptive: per packet over each group's ports (--ar-rule
split). The last column puts adaptive's busiest permutation links beside those of
weft's first static tables on the same fabric (ftree, or updn where ftree refuses).

Usage: bench_ar.py --weft BUILD/app/weft [--fabrics a,b] [--seeds N]
"""
import argparse
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, HERE)
import ibsim_bringup as b  # noqa: E402
import bench_bringup as bb  # noqa: E402
import bench_routing as br  # noqa: E402

FABRICS = [
    ("6-ary-3-tree", "ft3:pods=6,leaves=6,aggs=6,hosts=6,cores=6", 0),
    ("6-ary-3-tree-minus6", "ft3:pods=6,leaves=6,aggs=6,hosts=6,cores=6", 6),
]
WEFT_ENGINES = ["ftree+updn", "updn"]  # ftree falls back to updn where the tree is not whole
OPENSM_ENGINES = ["ftree", "updn"]
# leaf0-0 (the generator's first switch GUID): its first uplink (ports 1-6 face its hosts)
FAILED_LINK = "0x0002c90300001000:7"


def traffic(weft, topo, args, seed):
    return br.weft_route(weft, topo, ["--no-grade", "--seed", str(seed)] + args)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--fabrics", help="comma-separated names (default: all)")
    ap.add_argument("--seeds", type=int, default=5, help="random permutations per row")
    ap.add_argument("--scratch", default="/tmp/weft-bench-ar")
    a = ap.parse_args()
    if not shutil.which("opensm"):
        sys.exit("opensm is not installed (scripts/install-deps.sh --bench)")
    fabrics = [f for f in FABRICS if not a.fabrics or f[0] in a.fabrics.split(",")]
    rows = []
    for name, spec, cut in fabrics:
        work = os.path.join(a.scratch, name)
        os.makedirs(work, exist_ok=True)
        net = os.path.join(work, name + ".net")
        b.run([a.weft, "topo", spec, "-o", net], work, "", preload=False)
        if cut:
            b.degrade_net(net, cut)
        sargs, _, _ = bb.ibsim_args(net)
        topo, tables = None, []  # (label, extra weft route args)
        for e in OPENSM_ENGINES:
            sock = "weft-bench-ar-%s-%s-%d" % (name, e, os.getpid())
            dump, t, info = br.opensm_run(e, net, os.path.join(work, "opensm-" + e), sock, sargs)
            print("%s: opensm %s: %s" % (name, e, info), file=sys.stderr)
            if dump:
                topo = topo or t
                tables.append(("opensm " + info["used"], ["--lfts", "%s=%s" % (e, dump)]))
        if topo is None:
            continue
        tables += [("weft " + e, ["--engine", e]) for e in WEFT_ENGINES]
        for label, args in tables:
            perm = {"static": [0.0, 0.0], "adaptive": [0.0, 0.0]}
            for seed in range(1, a.seeds + 1):
                j = traffic(a.weft, topo, args + ["--traffic", "permutation"], seed)[-1]
                if j.get("routed_by") and j["routed_by"] != j["engine"]:
                    label = "weft %s -> %s" % (j["engine"], j["routed_by"])
                for side in perm:
                    t = j["traffic"]["permutation"][side]
                    perm[side][0] += t["max_link_flows"]
                    perm[side][1] += t["min_flow_throughput"] / a.seeds
            j = traffic(a.weft, topo, args + ["--traffic", "all-to-all"], 1)[-1]
            all2all = j["traffic"]["all-to-all"]
            failed = None
            if label.startswith("weft"):
                j = traffic(a.weft, topo, args + ["--traffic", "all-to-all", "--fail-link", FAILED_LINK], 1)[-1]
                failed = j["traffic"]["all-to-all"]
            rows.append((name, label, perm, all2all, failed))
            print("%s: %s done" % (name, label), file=sys.stderr)

    # weft's first static tables on each fabric (ftree, or what it fell back to).
    static_ftree = {}
    for name, label, perm, _, _ in rows:
        if label.startswith("weft"):
            static_ftree.setdefault(name, (label, perm["static"][0]))
    print("Permutations: %d random ones, busiest links summed, slowest flow averaged; a failed link: %s "
          "(all-to-all flows black-holed until the SM reroutes)." % (a.seeds, FAILED_LINK))
    print()
    print("| fabric | tables | permutation busiest link, static / adaptive | slowest flow, static / adaptive "
          "| all-to-all busiest link, static / adaptive | all-to-all slowest flow, static / adaptive "
          "| black-holed by the failed link, static / adaptive | adaptive busiest / weft's first static |")
    print("|---|---|---|---|---|---|---|---|")
    for name, label, perm, a2a, failed in rows:
        ratio = perm["adaptive"][0] / static_ftree[name][1] if static_ftree.get(name) else float("nan")
        bh = ("%d / %d of %d" % (failed["static"]["blackholed_flows"], failed["adaptive"]["blackholed_flows"],
                                 failed["static"]["flows"]) if failed else "n/a (no AR)")
        print("| %s | %s | %.4g / %.4g | %.3f / %.3f | %.4g / %.4g | %.4f / %.4f | %s | %.2f |" % (
            name, label, perm["static"][0], perm["adaptive"][0], perm["static"][1], perm["adaptive"][1],
            a2a["static"]["max_link_flows"], a2a["adaptive"]["max_link_flows"],
            a2a["static"]["min_flow_throughput"], a2a["adaptive"]["min_flow_throughput"], bh, ratio))


if __name__ == "__main__":
    main()
