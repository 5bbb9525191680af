#!/usr/bin/env python3
"""The topology page in headless Chromium, served by `weft sm` on ibsim.

Checked against what infiniband-diags read from the fabric, not against weft:
- one element per switch (data-guid) and one link element per link (data-link), the
  same set of links ibnetdiscover finds;
- the route the page traces between two hosts has the hops `ibtracert` follows;
- a node's details on click;
- ibsim's `Unlink` turns that link's colour within 2 s (live, from /api/v1/events);
- no script error in the page.
Then a 5x5 torus: drawn on its grid (coordinates read off the links), every link
ibnetdiscover finds joining switches one step apart (round the ring for the wrap-around
links, drawn as arcs), each switch where its coordinates put it, and a route across a
wrap-around link traced as ibtracert follows it.
Screenshots (before and after the Unlink, and the torus) stay in the test's output directory.
Everything started is stopped by PID, also on failure."""
import argparse
import base64
import contextlib
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ibsim_bringup as b  # noqa: E402
from cdp import Browser, CdpError  # noqa: E402
from ibsim_rest import Client, Daemon, admin_password, check, expect, fabric_scratch, free_port  # noqa: E402

TOPO = "ft2:leaves=4,spines=2,hosts=2"  # 6 switches, 8 CAs, 16 links
TORUS = "torus:dims=5x5,hosts=1"  # 25 switches, 25 CAs, 75 links


def link_id(ga, pa, gb, pb):
    a, b_ = (ga, pa), (gb, pb)
    lo, hi = min(a, b_), max(a, b_)
    return "0x%016x/%d-0x%016x/%d" % (lo[0], lo[1], hi[0], hi[1])


def discover(work, sock):
    """Switch GUIDs and link ids (node GUIDs, as the page names them) from ibnetdiscover."""
    text = b.run(["ibnetdiscover"], work, sock).stdout
    switches, links = set(), set()
    cur = None
    for line in text.splitlines():
        m = re.match(r"switchguid=0x([0-9a-f]+)", line)
        if m:
            cur = int(m.group(1), 16)
            switches.add(cur)
            continue
        if line.startswith("caguid="):
            cur = None
            continue
        m = re.match(r'\[(\d+)\]\s+"[SH]-([0-9a-f]+)"\[(\d+)\]', line)
        if m and cur is not None:
            links.add(link_id(cur, int(m.group(1)), int(m.group(2), 16), int(m.group(3))))
    return switches, links


def tracert(work, sock, slid, dlid):
    """ibtracert's switch hops: (node GUID, in port, out port)."""
    text = b.run(["ibtracert", str(slid), str(dlid)], work, sock).stdout
    hops, out = [], None
    for line in text.splitlines():
        m = re.match(r"\[(\d+)\] -> (\w+) port \{0x([0-9a-f]+)\}\[(\d+)\]", line)
        if m:
            if hops:
                hops[-1][2] = int(m.group(1))
            if m.group(2) == "switch":
                hops.append([int(m.group(3), 16), int(m.group(4)), None])
            out = m.group(2)
    check(hops and out == "ca", "ibtracert %d %d ends at no CA:\n%s" % (slid, dlid, text))
    return [tuple(h) for h in hops]


@contextlib.contextmanager
def daemon_part(daemons):
    """One part of the test: a failure prints the daemon's log tail and exits 1; the
    daemons started are stopped by PID either way."""
    try:
        yield
    except (b.Failure, CdpError) as e:
        print("FAIL:", e)
        for d in daemons:
            print(d.log_text()[-2000:])
        sys.exit(1)
    finally:
        for d in daemons:
            d.stop()


def page_route(page, switches):
    """The switch hops of the route the page traced: (GUID, in port, out port)."""
    page.wait("document.querySelectorAll('#route-hops li').length > 0", 60)
    hops = page.eval("[...document.querySelectorAll('#route-hops li')].map(li => "
                     "[li.dataset.guid, +li.dataset.in, +li.dataset.out])")
    return [(int(g, 16), i, o) for g, i, o in hops if int(g, 16) in switches]


def torus_page(a):
    """A 5x5 torus on its grid, checked against ibnetdiscover's links and ibtracert."""
    work, net, sock, state, log = fabric_scratch(a.weft, a.scratch, "page-torus", TORUS)
    port = free_port()
    daemons = []
    with b.Ibsim(net, work, sock), daemon_part(daemons):
        d = Daemon(a.weft, work, sock, state, log, port)
        daemons.append(d)
        d.start()
        auth = "Basic " + base64.b64encode(("admin:" + admin_password(state)).encode()).decode()
        switches, links = discover(work, sock)
        check(len(switches) == 25 and len(links) == 75, "ibnetdiscover: %d switches, %d links" %
              (len(switches), len(links)))
        st, text, _ = Client(port).call("GET", "/api/v1/topology", authz=auth)
        expect(st, 200, text, "topology")
        topo = json.loads(text)
        lid = {n["name"]: n["lid"] for n in topo["nodes"]}
        check(topo["layout"] == "grid" and topo["grid"] == {"radix": [5, 5], "wrap": True, "wraps": [True, True]},
              "layout %s, grid %s" % (topo["layout"], topo.get("grid")))
        coord = {int(n["guid"], 16): n["coord"] for n in topo["nodes"] if n["type"] == "switch"}
        # Every switch link ibnetdiscover finds: one step in one dimension.
        wraps = set()
        for l in links:
            ga, gb = (int(x.split("/")[0], 16) for x in l.split("-"))
            if ga not in coord or gb not in coord:
                continue
            steps = [abs(x - y) for x, y in zip(coord[ga], coord[gb])]
            check(sorted(steps) in ([0, 1], [0, 4]), "link %s joins %s and %s" % (l, coord[ga], coord[gb]))
            if 4 in steps:
                wraps.add(l)
        check(len(wraps) == 10, "%d wrap-around links, a 5x5 torus has 10" % len(wraps))
        # The route between the hosts of two switches 4 apart along one ring.
        sa, sb = (int(x.split("/")[0], 16) for x in sorted(wraps)[0].split("-"))
        host = {}
        for n in topo["nodes"]:
            if n["type"] != "switch":
                host[int(n["leaf"], 16)] = n["name"]
        src, dst = host[sa], host[sb]
        with Browser(work) as br:
            page = br.page(authorization=auth)
            page.goto("http://127.0.0.1:%d/?route=%s,%s" % (port, src, dst))
            page.wait("document.body && document.body.dataset.rendered === '1'", 60)
            check(page.eval("window.weftRendered.layout") == "grid", "the page's layout is not the grid")
            drawn_links = page.eval("[...document.querySelectorAll('#links [data-link]')].map(e => e.dataset.link)")
            check(set(drawn_links) == links and len(drawn_links) == len(links),
                  "%d link elements, ibnetdiscover %d" % (len(drawn_links), len(links)))
            arcs = page.eval("[...document.querySelectorAll('#links path[data-link]')].map(e => e.dataset.link)")
            check(set(arcs) == wraps, "arcs %s, wrap-around links %s" % (sorted(arcs), sorted(wraps)))
            pos = page.eval("Object.fromEntries([...document.querySelectorAll('[data-guid][data-type=switch]')]"
                            ".map(e => [e.dataset.guid, e.getAttribute('transform')]))")
            xy = {}
            for g, tr in pos.items():
                m = re.match(r"translate\(([-\d.e]+),([-\d.e]+)\)", tr)
                check(m, "switch %s at %s" % (g, tr))
                xy[int(g, 16)] = (float(m.group(1)), float(m.group(2)))
            check(set(xy) == switches, "switch elements != ibnetdiscover's switches")
            origin = [g for g, c in coord.items() if c == [0, 0]][0]
            step = [g for g, c in coord.items() if c == [1, 0]][0]
            cell = xy[step][0] - xy[origin][0]
            check(cell > 0, "x does not grow with the first coordinate")
            for g, c in coord.items():
                want = (xy[origin][0] + cell * c[0], xy[origin][1] + cell * c[1])
                check(abs(xy[g][0] - want[0]) < 0.5 and abs(xy[g][1] - want[1]) < 0.5,
                      "switch at %s drawn at %s, not on the grid (%s)" % (c, xy[g], want))
            got = page_route(page, switches)
            want = tracert(work, sock, lid[src], lid[dst])
            check(got == want, "the page's route %s, ibtracert's %s" % (got, want))
            check(len(want) == 2, "%s -> %s takes %d switch hops, not the wrap-around link" % (src, dst, len(want)))
            check(page.eval("document.querySelectorAll('#route path[data-route-link]').length") == 1,
                  "the route across the wrap-around link is not drawn along its arc")
            page.screenshot(os.path.join(work, "topology-torus.png"))
            errors = page.console_errors()
            check(not errors, "script errors in the page: %s" % errors)
        print("torus: grid of 25 switches as ibnetdiscover links them, 10 wrap-around arcs; "
              "route %s -> %s across one as ibtracert" % (src, dst))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--scratch", required=True)
    a = ap.parse_args()
    work, net, sock, state, log = fabric_scratch(a.weft, a.scratch, "page", TOPO)
    conf = os.path.join(work, "weft.conf")
    with open(conf, "w") as f:
        f.write("perfmgr TRUE\nperfmgr_sweep_time_s 1\n")
    port = free_port()
    daemons = []
    with b.Ibsim(net, work, sock) as sim, daemon_part(daemons):
        d = Daemon(a.weft, work, sock, state, log, port, ["--config", conf])
        daemons.append(d)
        d.start()
        cl = Client(port)
        pw = admin_password(state)
        auth = "Basic " + base64.b64encode(("admin:" + pw).encode()).decode()
        switches, links = discover(work, sock)
        check(len(switches) == 6 and len(links) == 16, "ibnetdiscover: %d switches, %d links" %
              (len(switches), len(links)))
        st, text, hdr = cl.call("GET", "/")
        expect(st, 200, text, "the page without credentials")
        check(hdr.get("Content-Type", "").startswith("text/html") and "topology.js" in text, "/: " + text[:200])
        st, text, _ = cl.call("GET", "/api/v1/topology", authz=auth)
        expect(st, 200, text, "topology")
        topo = json.loads(text)
        lid = {n["name"]: n["lid"] for n in topo["nodes"]}
        st, text, _ = cl.call("GET", "/api/v1/topology")
        expect(st, 401, text, "the data without credentials")

        with Browser(work) as br:
            page = br.page(authorization=auth)
            t0 = time.time()
            page.goto("http://127.0.0.1:%d/?route=h0-0,h3-1" % port)
            page.wait("document.body && document.body.dataset.rendered === '1'", 60)
            print("page loaded and drawn in %.2f s (render %.1f ms)" %
                  (time.time() - t0, page.eval("window.weftRendered.ms")))
            drawn_sw = page.eval("[...document.querySelectorAll('[data-guid][data-type=switch]')]"
                                 ".map(e => e.dataset.guid)")
            check(sorted(int(g, 16) for g in drawn_sw) == sorted(switches),
                  "switch elements %s, ibnetdiscover %s" % (drawn_sw, ["0x%x" % s for s in switches]))
            drawn_links = page.eval("[...document.querySelectorAll('[data-link]')].map(e => e.dataset.link)")
            check(len(drawn_links) == len(set(drawn_links)) == len(links) and set(drawn_links) == links,
                  "link elements %s, ibnetdiscover %s" % (sorted(drawn_links), sorted(links)))
            check(page.eval("document.querySelectorAll('[data-guid][data-type=ca]').length") == 8, "8 CAs")
            print("page: %d switch elements, %d links = ibnetdiscover's" % (len(drawn_sw), len(drawn_links)))

            # The traced route against ibtracert.
            sw_hops = page_route(page, switches)
            want = tracert(work, sock, lid["h0-0"], lid["h3-1"])
            check(sw_hops == want, "the page's route %s, ibtracert's %s" % (sw_hops, want))
            check(page.eval("document.querySelectorAll('#route [data-route-link]').length") == len(want) + 1,
                  "the route drawn over every link it takes")
            print("route h0-0 -> h3-1: %d switch hops as ibtracert" % len(want))

            # Details on click.
            leaf0 = [n for n in topo["nodes"] if n["name"] == "leaf0"][0]["guid"]
            page.eval("document.querySelector('[data-guid=\"%s\"]').dispatchEvent(new MouseEvent('click', "
                      "{bubbles: true}))" % leaf0)
            try:
                page.wait("document.querySelector('#details h2') && "
                          "document.querySelector('#details h2').textContent === 'leaf0' && "
                          "document.querySelectorAll('#details table').length === 3 && "
                          "document.querySelector('#details table[data-ar]') !== null", 60)
            except CdpError:
                raise b.Failure("no details of leaf0 on click: " + page.eval("document.querySelector('#details').innerText"))
            # Its adaptive routing as the SM holds it: not asked for on this fabric.
            ar_state = page.eval("document.querySelector('#details table[data-ar]').dataset.ar")
            check(ar_state == "not asked", "leaf0's adaptive routing shown as %r" % ar_state)
            page.screenshot(os.path.join(work, "topology.png"))

            # Unlink leaf0/3 in ibsim: its link changes colour within 2 s.
            target = [l for l in topo["links"] if (l["a"] == leaf0 and l["pa"] == 3) or
                      (l["b"] == leaf0 and l["pb"] == 3)][0]["id"]
            sel = "document.querySelector('[data-link=\"%s\"]')" % target
            before = page.eval(sel + ".getAttribute('stroke')")
            os.write(sim.fifo_fd, b'Unlink "leaf0"[3]\n')
            t0 = time.time()
            try:
                page.wait("%s.getAttribute('stroke') !== '%s'" % (sel, before), 60, step=0.02)
            except CdpError:
                raise b.Failure("the link %s kept its colour %s 60 s after Unlink" % (target, before))
            took = time.time() - t0
            after = page.eval(sel + ".getAttribute('stroke')")
            check(page.eval(sel + ".dataset.state") == "Down", "the link is not shown down")
            print("Unlink \"leaf0\"[3]: %s -> %s in %.2f s" % (before, after, took))
            page.wait("Number(document.body.dataset.refreshed || 0) > 0", 60)
            check(page.eval(sel + ".dataset.state") == "Down", "a refresh brought the link back")
            page.screenshot(os.path.join(work, "topology-unlinked.png"))
            errors = page.console_errors()
            check(not errors, "script errors in the page: %s" % errors)
        print("screenshots: %s" % os.path.join(work, "topology*.png"))
    torus_page(a)
    print("PASS")


if __name__ == "__main__":
    main()
