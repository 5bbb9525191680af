// weft's topology page: the fabric from /api/v1/topology drawn in plain SVG, by switch
// tier for trees, on their grid for tori and meshes (a 3-D one as its z planes side by
// side, wrap-around links as arcs), and by a force layout otherwise; hosts folded per leaf on large
// fabrics; links coloured by state, health and load; details on click; a route traced
// through the programmed tables (/api/v1/routes); live updates from /api/v1/events.
// Every node's element carries data-guid, every link's data-link
// ("GUID/port-GUID/port", the lower end first), for tests and admins' scripts.
// Query parameters: ?route=SRC,DST traces on load, ?fold=0|1 forces host folding.
"use strict";

(function () {
  const SVGNS = "http://www.w3.org/2000/svg";
  const FOLD_ABOVE = 256;  // CAs drawn one by one up to this many
  const params = new URLSearchParams(location.search);
  const state = {
    topo: null,         // the last /api/v1/topology
    pos: new Map(),     // element key -> {x, y}
    links: new Map(),   // link id -> {link, el}
    downed: new Set(),  // link ids the events said went down since the last fetch
    fold: false,
    route: null,        // [src, dst] being shown
  };
  const $ = (id) => document.getElementById(id);

  function el(name, attrs, parent) {
    const e = document.createElementNS(SVGNS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  async function api(path) {
    const r = await fetch(path, {credentials: "same-origin", headers: {Accept: "application/json"}});
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error((body.error && body.error.message) || r.status + " " + r.statusText);
    return body;
  }

  function linkId(ga, pa, gb, pb) {
    const a = ga + "/" + pa, b = gb + "/" + pb;
    const lower = BigInt(ga) < BigInt(gb) || (ga === gb && pa <= pb);
    return lower ? a + "-" + b : b + "-" + a;
  }

  // --- colour ----------------------------------------------------------------

  function mix(c1, c2, t) {
    const p = (c) => [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16));
    const a = p(c1), b = p(c2);
    return "#" + a.map((v, i) => Math.round(v + (b[i] - v) * t).toString(16).padStart(2, "0")).join("");
  }

  function linkColour(l, down) {
    if (down) return "#7f7f7f";
    if (l.health === "unhealthy") return "#d62728";
    if (l.health === "congested") return "#9467bd";
    if (l.health === "errors") return "#ff7f0e";
    if (l.state !== "Active") return "#1f77b4";
    return mix("#2ca02c", "#bcbd22", Math.min(1, (l.load || 0) / 0.8));
  }

  function paintLink(id) {
    const e = state.links.get(id);
    if (!e) return;
    const down = state.downed.has(id) || e.link.gone;
    e.el.setAttribute("stroke", linkColour(e.link, down));
    e.el.setAttribute("class", "link" + (down ? " down" : e.link.state !== "Active" ? " notactive" : ""));
    e.el.dataset.state = down ? "Down" : e.link.state;
    e.el.dataset.health = e.link.health;
  }

  // A leaf's folded host links take the colour of the worst of them.
  const RANK = {unhealthy: 4, congested: 3, errors: 2, ok: 0};
  function paintFolds() {
    for (const f of (state.folds || new Map()).values()) {
      let worst = f.links[0];
      for (const l of f.links) {
        const r = (x) => (x.gone ? 5 : RANK[x.health] || 0) + (x.state !== "Active" ? 1 : 0);
        if (r(l) > r(worst)) worst = l;
      }
      f.el.setAttribute("stroke", linkColour(worst, worst.gone));
      const title = f.el.querySelector("title") || el("title", {}, f.el);
      title.textContent = `${f.links.length} host links; the worst: ${worst.health}`;
    }
  }

  // --- layout ----------------------------------------------------------------

  // Trees: the top tier first, CAs (or their folds) under their leaf. Within a tier,
  // leaves by name, upper tiers by the mean position of their neighbours below.
  function tierLayout(t, nodes, adj, hosts) {
    const tiers = [];
    for (const n of nodes) if (n.type === "switch") (tiers[n.tier] = tiers[n.tier] || []).push(n);
    const order = new Map();
    const byName = (a, b) => (a.name || a.guid).localeCompare(b.name || b.guid, undefined, {numeric: true});
    tiers[0] = (tiers[0] || []).sort(byName);
    tiers[0].forEach((n, i) => order.set(n.guid, i));
    for (let k = 1; k < tiers.length; ++k) {
      const key = (n) => {
        const below = (adj.get(n.guid) || []).filter((g) => order.has(g));
        return below.length ? below.reduce((s, g) => s + order.get(g), 0) / below.length : 0;
      };
      const keyed = tiers[k].map((n) => [key(n), n]).sort((a, b) => a[0] - b[0] || byName(a[1], b[1]));
      tiers[k] = keyed.map((x) => x[1]);
      const span = tiers[0].length / Math.max(1, tiers[k].length);
      tiers[k].forEach((n, i) => order.set(n.guid, (i + 0.5) * span - 0.5));
    }
    const leaves = tiers[0];
    const perLeaf = new Map();
    for (const h of hosts) {
      if (!perLeaf.has(h.leaf)) perLeaf.set(h.leaf, []);
      perLeaf.get(h.leaf).push(h);
    }
    const hostRow = state.fold ? 1 : Math.max(1, ...[...perLeaf.values()].map((v) => v.length));
    const slot = state.fold ? 1 : Math.min(hostRow, 8);  // hosts side by side under a leaf
    const cell = Math.max(34, slot * 14);
    const width = Math.max(600, leaves.length * cell);
    const rowH = 90;
    const top = tiers.length - 1;
    for (let k = 0; k < tiers.length; ++k) {
      const row = tiers[k];
      const step = width / Math.max(1, row.length);
      row.forEach((n, i) => state.pos.set(n.guid, {x: (i + 0.5) * step, y: 30 + (top - k) * rowH}));
    }
    const baseY = 30 + tiers.length * rowH;
    const leafStep = width / Math.max(1, leaves.length);
    for (const [leaf, hs] of perLeaf) {
      const lp = state.pos.get(leaf);
      if (!lp) continue;
      if (state.fold) {
        state.pos.set("fold:" + leaf, {x: lp.x, y: baseY});
        continue;
      }
      hs.sort(byName);
      const cols = Math.min(slot, hs.length), dx = Math.min(14, (leafStep - 4) / cols);
      hs.forEach((h, i) => state.pos.set(h.guid, {
        x: lp.x + (i % cols - (cols - 1) / 2) * dx,
        y: baseY + Math.floor(i / cols) * 16,
      }));
    }
  }

  // Tori and meshes: each switch at its coordinates (x across, y down; the z planes
  // side by side), its hosts (or their fold) in a block under it.
  function gridLayout(t, switches, hosts) {
    const rx = t.grid.radix[0];
    const perSwitch = new Map();
    for (const h of hosts) {
      if (!perSwitch.has(h.leaf)) perSwitch.set(h.leaf, []);
      perSwitch.get(h.leaf).push(h);
    }
    const most = Math.max(1, ...[...perSwitch.values()].map((v) => v.length));
    const cols = state.fold ? 1 : Math.min(most, 4), rows = state.fold ? 1 : Math.ceil(most / cols);
    const cell = Math.max(70, 14 * cols + 30, 16 * rows + 46);
    state.gridCell = cell;
    const at = (c) => ({x: 40 + (c[0] + (c[2] || 0) * (rx + 1)) * cell, y: 40 + (c[1] || 0) * cell});
    for (const n of switches) if (n.coord) state.pos.set(n.guid, at(n.coord));
    for (const [sw, hs] of perSwitch) {
      const sp = state.pos.get(sw);
      if (!sp) continue;
      if (state.fold) {
        state.pos.set("fold:" + sw, {x: sp.x + 12, y: sp.y + 22});
        continue;
      }
      hs.sort((a, b) => (a.name || a.guid).localeCompare(b.name || b.guid, undefined, {numeric: true}));
      const c = Math.min(cols, hs.length);
      hs.forEach((h, i) => state.pos.set(h.guid, {x: sp.x + (i % c - (c - 1) / 2) * 14,
                                                   y: sp.y + 22 + Math.floor(i / c) * 16}));
    }
  }

  // A grid's wrap-around link (coordinates more than one apart): an arc beside its
  // row (x), its column (y) or under the planes (z), not a line over the others.
  function wrapArc(l, a, b) {
    const ca = (state.coord.get(l.a) || []), cb = (state.coord.get(l.b) || []);
    const d = ca.findIndex((v, i) => Math.abs(v - cb[i]) > 1);
    if (d < 0) return null;
    const bulge = 0.45 * (state.gridCell || 70);
    const mx = (a.x + b.x) / 2, my = (a.y + b.y) / 2;
    const c = d === 1 ? {x: mx - bulge, y: my} : {x: mx, y: my + (d === 0 ? -bulge : bulge)};
    return `M ${a.x} ${a.y} Q ${c.x} ${c.y} ${b.x} ${b.y}`;
  }

  // Anything else: Fruchterman-Reingold from a circle (deterministic), a bounded
  // number of rounds, a grid of cells for the repulsion on large fabrics.
  function forceLayout(nodes, edges) {
    const n = nodes.length;
    const size = Math.max(600, Math.sqrt(n) * 60);
    const k = size / Math.sqrt(Math.max(1, n));
    const p = nodes.map((nd, i) => ({
      x: size / 2 + (size / 3) * Math.cos((2 * Math.PI * i) / n),
      y: size / 2 + (size / 3) * Math.sin((2 * Math.PI * i) / n),
      dx: 0, dy: 0,
    }));
    const index = new Map(nodes.map((nd, i) => [nd.key, i]));
    const es = edges.map(([a, b]) => [index.get(a), index.get(b)]).filter(([a, b]) => a !== undefined && b !== undefined);
    const rounds = n > 2000 ? 60 : n > 500 ? 120 : 250;
    let temp = size / 10;
    for (let r = 0; r < rounds; ++r) {
      for (const q of p) q.dx = q.dy = 0;
      const grid = new Map();
      const cellOf = (q) => Math.floor(q.x / (2 * k)) + "," + Math.floor(q.y / (2 * k));
      p.forEach((q, i) => {
        const c = cellOf(q);
        if (!grid.has(c)) grid.set(c, []);
        grid.get(c).push(i);
      });
      p.forEach((q, i) => {
        const cx = Math.floor(q.x / (2 * k)), cy = Math.floor(q.y / (2 * k));
        for (let gx = cx - 1; gx <= cx + 1; ++gx)
          for (let gy = cy - 1; gy <= cy + 1; ++gy)
            for (const j of grid.get(gx + "," + gy) || []) {
              if (j === i) continue;
              let dx = q.x - p[j].x, dy = q.y - p[j].y;
              let d2 = dx * dx + dy * dy;
              if (d2 < 0.01) { dx = 0.1 * ((i % 7) - 3); dy = 0.1 * ((j % 5) - 2); d2 = 0.02; }
              const f = (k * k) / d2;
              q.dx += dx * f;
              q.dy += dy * f;
            }
      });
      for (const [a, b] of es) {
        const dx = p[a].x - p[b].x, dy = p[a].y - p[b].y;
        const d = Math.sqrt(dx * dx + dy * dy) || 0.1;
        const f = d / k;
        p[a].dx -= dx * f; p[a].dy -= dy * f;
        p[b].dx += dx * f; p[b].dy += dy * f;
      }
      for (const q of p) {
        const d = Math.sqrt(q.dx * q.dx + q.dy * q.dy) || 1;
        const m = Math.min(d, temp);
        q.x += (q.dx / d) * m;
        q.y += (q.dy / d) * m;
      }
      temp *= 0.97;
    }
    nodes.forEach((nd, i) => state.pos.set(nd.key, {x: p[i].x, y: p[i].y}));
  }

  // --- drawing ---------------------------------------------------------------

  function render(t) {
    const started = performance.now();
    state.topo = t;
    state.pos.clear();
    state.links.clear();
    state.downed.clear();
    const hosts = t.nodes.filter((n) => n.type !== "switch");
    const switches = t.nodes.filter((n) => n.type === "switch");
    state.fold = params.has("fold") ? params.get("fold") === "1" : hosts.length > FOLD_ABOVE;
    const adj = new Map();
    for (const l of t.links) {
      if (!adj.has(l.a)) adj.set(l.a, []);
      if (!adj.has(l.b)) adj.set(l.b, []);
      adj.get(l.a).push(l.b);
      adj.get(l.b).push(l.a);
    }
    const byGuid = new Map(t.nodes.map((n) => [n.guid, n]));
    const drawnKey = (g) => {
      const n = byGuid.get(g);
      return n && n.type !== "switch" && state.fold && n.leaf ? "fold:" + n.leaf : g;
    };
    state.coord = new Map(switches.filter((n) => n.coord).map((n) => [n.guid, n.coord]));
    if (t.layout === "tiers") {
      tierLayout(t, t.nodes, adj, hosts);
    } else if (t.layout === "grid" && t.grid) {
      gridLayout(t, switches, hosts);
    } else {
      const keys = new Map();
      for (const n of t.nodes) keys.set(drawnKey(n.guid), {key: drawnKey(n.guid)});
      const edges = [];
      for (const l of t.links) if (drawnKey(l.a) !== drawnKey(l.b)) edges.push([drawnKey(l.a), drawnKey(l.b)]);
      forceLayout([...keys.values()], edges);
    }
    const gl = $("links"), gn = $("nodes");
    gl.textContent = gn.textContent = $("route").textContent = "";
    state.folds = new Map();  // fold key -> {el, links}: one line for a leaf's hosts
    for (const l of t.links) {
      const a = state.pos.get(drawnKey(l.a)), b = state.pos.get(drawnKey(l.b));
      if (!a || !b) continue;
      const folded = drawnKey(l.a) !== l.a || drawnKey(l.b) !== l.b;
      if (folded) {
        const key = drawnKey(l.a) + "|" + drawnKey(l.b);
        if (!state.folds.has(key)) {
          const e = el("line", {x1: a.x, y1: a.y, x2: b.x, y2: b.y, "stroke-width": 3, class: "link"}, gl);
          e.dataset.foldLink = key;
          state.folds.set(key, {el: e, links: []});
        }
        state.folds.get(key).links.push(l);
        continue;
      }
      const arc = t.layout === "grid" ? wrapArc(l, a, b) : null;
      const e = arc ? el("path", {d: arc, fill: "none", "stroke-width": 1.6}, gl)
                    : el("line", {x1: a.x, y1: a.y, x2: b.x, y2: b.y, "stroke-width": 1.6}, gl);
      const title = el("title", {}, e);
      title.textContent = `${name(l.a)}/${l.pa} — ${name(l.b)}/${l.pb}: ${l.state} ${l.width} ${l.speed}` +
        (l.why ? "\n" + l.why : "") + (l.errors ? `\n${l.errors} errors in the window` : "") +
        `\nload ${(100 * (l.load || 0)).toFixed(1)} %`;
      e.dataset.link = l.id;
      e.addEventListener("click", (ev) => { ev.stopPropagation(); showLink(l); });
      state.links.set(l.id, {link: l, el: e});
      paintLink(l.id);
    }
    paintFolds();
    for (const n of switches) drawNode(gn, n, state.pos.get(n.guid), "sw");
    if (state.fold) {
      const folds = new Map();
      for (const h of hosts) if (h.leaf) folds.set(h.leaf, (folds.get(h.leaf) || 0) + 1);
      for (const [leaf, count] of folds) {
        const p = state.pos.get("fold:" + leaf);
        if (!p) continue;
        const g = el("g", {class: "node", transform: `translate(${p.x},${p.y})`}, gn);
        g.dataset.fold = leaf;
        g.dataset.hosts = count;
        el("rect", {class: "fold", x: -9, y: -6, width: 18, height: 12, rx: 3}, g);
        el("title", {}, g).textContent = `${count} hosts on ${name(leaf)}`;
        g.addEventListener("click", (ev) => { ev.stopPropagation(); showFold(leaf); });
      }
    } else {
      for (const h of hosts) drawNode(gn, h, state.pos.get(h.guid), "ca");
    }
    for (const n of t.nodes) if (n.type !== "switch" && !n.leaf && !state.pos.get(n.guid) && !state.fold)
      drawNode(gn, n, {x: 10, y: 10}, "ca");
    fit();
    const hl = $("hosts");
    hl.textContent = "";
    for (const h of hosts.slice(0, 5000)) {
      const o = document.createElement("option");
      o.value = h.name || h.guid;
      hl.appendChild(o);
    }
    $("stats").textContent = `${switches.length} switches · ${hosts.length} CAs · ` +
      `${t.links.filter((l) => !l.gone).length} links` +
      (state.fold ? " (hosts folded per leaf)" : "") + ` · sweep ${t.sweeps}`;
    const ms = performance.now() - started;
    window.weftRendered = {ms: ms, nodes: t.nodes.length, links: t.links.length, layout: t.layout,
                           at: performance.now()};
    document.body.dataset.rendered = String((Number(document.body.dataset.rendered) || 0) + 1);
    if (state.route) trace(state.route[0], state.route[1]);
  }

  function name(guid) {
    const n = state.topo && state.topo.nodes.find((x) => x.guid === guid);
    return (n && n.name) || guid;
  }

  function drawNode(parent, n, p, cls) {
    if (!p) return;
    const g = el("g", {class: "node" + (n.unhealthy ? " unhealthy" : ""), transform: `translate(${p.x},${p.y})`}, parent);
    g.dataset.guid = n.guid;
    g.dataset.type = n.type;
    if (cls === "sw") el("rect", {class: "sw", x: -7, y: -5, width: 14, height: 10, rx: 2}, g);
    else el("circle", {class: "ca", r: 4}, g);
    el("title", {}, g).textContent = `${n.name || ""} ${n.guid} LID ${n.lid || "-"}`;
    if (state.topo.nodes.length <= 120) {
      const tx = el("text", cls === "sw" ? {y: -8, "text-anchor": "middle"}
                                         : {x: 3, y: 8, transform: "rotate(50)", "text-anchor": "start"}, g);
      tx.textContent = n.name || n.guid.slice(-6);
    }
    g.addEventListener("click", (ev) => { ev.stopPropagation(); showNode(n); });
  }

  // The drawing scaled to the window; the wheel zooms, a drag pans.
  const view = {x: 0, y: 0, w: 1000, h: 800};
  function fit() {
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const p of state.pos.values()) {
      x0 = Math.min(x0, p.x); y0 = Math.min(y0, p.y); x1 = Math.max(x1, p.x); y1 = Math.max(y1, p.y);
    }
    if (!isFinite(x0)) return;
    Object.assign(view, {x: x0 - 30, y: y0 - 30, w: x1 - x0 + 60, h: y1 - y0 + 60});
    applyView();
  }
  function applyView() {
    $("fabric").setAttribute("viewBox", `${view.x} ${view.y} ${view.w} ${view.h}`);
  }
  function panZoom() {
    const svg = $("fabric");
    svg.addEventListener("wheel", (e) => {
      e.preventDefault();
      const f = e.deltaY > 0 ? 1.15 : 1 / 1.15;
      const r = svg.getBoundingClientRect();
      const mx = view.x + ((e.clientX - r.left) / r.width) * view.w;
      const my = view.y + ((e.clientY - r.top) / r.height) * view.h;
      Object.assign(view, {x: mx - (mx - view.x) * f, y: my - (my - view.y) * f, w: view.w * f, h: view.h * f});
      applyView();
    }, {passive: false});
    let drag = null;
    svg.addEventListener("mousedown", (e) => { drag = {x: e.clientX, y: e.clientY, vx: view.x, vy: view.y}; });
    window.addEventListener("mouseup", () => { drag = null; });
    window.addEventListener("mousemove", (e) => {
      if (!drag) return;
      const r = svg.getBoundingClientRect();
      view.x = drag.vx - ((e.clientX - drag.x) / r.width) * view.w;
      view.y = drag.vy - ((e.clientY - drag.y) / r.height) * view.h;
      applyView();
    });
  }

  // --- details ---------------------------------------------------------------

  function table(rows) {
    const t = document.createElement("table");
    for (const [k, v] of rows) {
      const tr = t.insertRow();
      tr.insertCell().textContent = k;
      tr.insertCell().textContent = v === undefined || v === null ? "—" : String(v);
    }
    return t;
  }

  function select(guid) {
    for (const g of document.querySelectorAll(".node.selected")) g.classList.remove("selected");
    const g = guid && document.querySelector(`[data-guid="${guid}"]`);
    if (g) g.classList.add("selected");
  }

  async function showNode(n) {
    select(n.guid);
    const d = $("details");
    d.textContent = "";
    const h = document.createElement("h2");
    h.textContent = n.name || n.guid;
    d.appendChild(h);
    d.appendChild(table([["GUID", n.guid], ["type", n.type], ["LID", n.lid], ["ports", n.ports],
                         n.coord ? ["coordinates", n.coord.join(", ")] : ["tier", n.tier],
                         ["leaf", n.leaf ? name(n.leaf) : undefined]]));
    try {
      const full = await api("/api/v1/nodes/" + n.guid);
      const rows = [];
      for (const p of full.port_list || [])
        if (p.peer) {
          rows.push([`port ${p.port}`, `${p.state} ${p.width || ""} ${p.speed || ""} → ${p.peer.name}`]);
          // SR-IOV virtual ports behind a CA port.
          for (const v of p.vports || [])
            rows.push([`port ${p.port} VF ${v.index}`,
                       `${v.state} ${v.guid} LID ${v.lid} P_Keys ${(v.pkeys || []).join(" ")}`]);
        }
      d.appendChild(table(rows));
      if (n.type === "switch") d.appendChild(arTable(await api("/api/v1/switches/" + n.guid + "/ar")));
    } catch (e) {
      const p = document.createElement("p");
      p.className = "error";
      p.textContent = e.message;
      d.appendChild(p);
    }
  }

  // A switch's adaptive routing as /api/v1/switches/{guid}/ar gives it.
  function arTable(ar) {
    const st = !ar.asked ? "not asked" : !ar.supported ? "unsupported" : ar.enabled ? "on" : "off";
    const rows = [["adaptive routing", st]];
    if (ar.asked && ar.supported) {
      rows.push(["GroupCap", ar.group_cap], ["GroupTop", ar.group_top],
                ["groups", (ar.groups || []).length], ["LIDs routed adaptively", (ar.entries || []).length]);
      for (const g of (ar.groups || []).slice(0, 8)) rows.push([`group ${g.group}`, "ports " + g.ports.join(", ")]);
    }
    const t = table(rows);
    t.dataset.ar = st;
    return t;
  }

  async function showLink(l) {
    select(null);
    const d = $("details");
    d.textContent = "";
    const h = document.createElement("h2");
    h.textContent = `${name(l.a)}/${l.pa} — ${name(l.b)}/${l.pb}`;
    d.appendChild(h);
    d.appendChild(table([["state", state.downed.has(l.id) ? "Down" : l.state], ["width", l.width],
                         ["speed", l.speed], ["health", l.health + (l.why ? ": " + l.why : "")],
                         ["errors in window", l.errors], ["congestion events", l.cc_events || 0],
                         ["load", (100 * (l.load || 0)).toFixed(2) + " %"]]));
    for (const [g, p] of [[l.a, l.pa], [l.b, l.pb]]) {
      try {
        const c = await api(`/api/v1/ports/${g}/${p}/counters`);
        const rows = [["read", c.read ? "yes" : c.error]];
        for (const [k, v] of Object.entries(c.counters)) if (v.total) rows.push([k, `${v.total} (+${v.delta})`]);
        rows.push(["xmit", (c.xmit_bytes_per_s / 1e6).toFixed(2) + " MB/s"]);
        const s = document.createElement("h2");
        s.textContent = `${name(g)}/${p} counters`;
        d.appendChild(s);
        d.appendChild(table(rows));
      } catch (e) {
        const s = document.createElement("p");
        s.textContent = `${name(g)}/${p}: ${e.message}`;
        d.appendChild(s);
      }
    }
  }

  function showFold(leaf) {
    const d = $("details");
    d.textContent = "";
    const h = document.createElement("h2");
    h.textContent = "hosts on " + name(leaf);
    d.appendChild(h);
    const hs = state.topo.nodes.filter((n) => n.leaf === leaf);
    d.appendChild(table(hs.map((n) => [n.name || n.guid, `LID ${n.lid} ${n.guid}`])));
  }

  // --- routes ----------------------------------------------------------------

  async function trace(src, dst) {
    state.route = [src, dst];
    const out = $("route-out"), g = $("route");
    g.textContent = "";
    out.textContent = "";
    const h = document.createElement("h2");
    h.textContent = `route ${src} → ${dst}`;
    out.appendChild(h);
    let r;
    try {
      r = await api(`/api/v1/routes?src=${encodeURIComponent(src)}&dst=${encodeURIComponent(dst)}`);
    } catch (e) {
      const p = document.createElement("p");
      p.className = "error";
      p.textContent = e.message;
      out.appendChild(p);
      out.dataset.complete = "false";
      return;
    }
    const ol = document.createElement("ol");
    ol.id = "route-hops";
    r.hops.forEach((hop, i) => {
      const li = document.createElement("li");
      li.dataset.guid = hop.guid;
      li.dataset.in = hop.in_port;
      li.dataset.out = hop.out_port;
      li.textContent = `${hop.name || hop.guid}` + (hop.in_port ? ` in ${hop.in_port}` : "") +
        (hop.out_port ? ` out ${hop.out_port}` : "") + (hop.vl !== undefined ? ` VL${hop.vl}` : "");
      ol.appendChild(li);
      const next = r.hops[i + 1];
      if (!next) return;
      const id = linkId(hop.guid, hop.out_port, next.guid, next.in_port);
      const e = state.links.get(id);
      if (!e) return;
      // The link's own shape (a line, or a grid's wrap-around arc), drawn over it.
      const seg = e.el.cloneNode(false);
      for (const k of ["stroke", "stroke-width", "class", "data-link", "data-state", "data-health"])
        seg.removeAttribute(k);
      seg.dataset.routeLink = id;
      g.appendChild(seg);
    });
    out.appendChild(ol);
    out.dataset.complete = String(r.complete);
    if (!r.complete) {
      const p = document.createElement("p");
      p.className = "error";
      p.textContent = r.problem;
      out.appendChild(p);
    }
    if (r.path_record) {
      const pr = r.path_record;
      out.appendChild(table([["SLID → DLID", `${pr.slid} → ${pr.dlid}`], ["SL", pr.sl], ["MTU", pr.mtu],
                             ["P_Key", pr.pkey]]));
    }
  }

  // --- live ------------------------------------------------------------------

  let refetchTimer = null;
  function refetchSoon(delay) {
    clearTimeout(refetchTimer);
    refetchTimer = setTimeout(refresh, delay);
  }

  // A new topology: drawn again when nodes came or went, else links repainted in
  // place (a link no longer in the fabric stays drawn, as down).
  async function refresh() {
    let t;
    try {
      t = await api("/api/v1/topology");
    } catch (e) {
      $("stats").textContent = "fabric: " + e.message;
      return;
    }
    const old = state.topo;
    const sameNodes = old && old.nodes.length === t.nodes.length &&
      t.nodes.every((n, i) => n.guid === old.nodes[i].guid);
    const known = new Set(state.links.keys());
    for (const f of (state.folds || new Map()).values()) for (const l of f.links) known.add(l.id);
    const allKnown = t.links.every((l) => known.has(l.id));
    if (!sameNodes || !allKnown) {
      const gone = old ? old.links.filter((l) => !t.links.some((x) => x.id === l.id)) : [];
      const keep = gone.filter((l) => t.nodes.some((n) => n.guid === l.a) && t.nodes.some((n) => n.guid === l.b));
      t.links = t.links.concat(keep.map((l) => Object.assign({}, l, {gone: true})));
      render(t);
      return;
    }
    const now = new Map(t.links.map((l) => [l.id, l]));
    for (const [id, e] of state.links) {
      const l = now.get(id);
      if (l) {
        e.link = l;
        state.downed.delete(id);
      } else {
        e.link.gone = true;
      }
      paintLink(id);
    }
    for (const f of (state.folds || new Map()).values())
      f.links = f.links.map((l) => now.get(l.id) || Object.assign({}, l, {gone: true}));
    paintFolds();
    for (const l of old.links) if (!now.has(l.id)) t.links.push(Object.assign({}, l, {gone: true}));
    state.topo = t;
    $("stats").textContent = `${t.nodes.filter((n) => n.type === "switch").length} switches · ` +
      `${t.nodes.filter((n) => n.type !== "switch").length} CAs · ${now.size} links` +
      (state.fold ? " (hosts folded per leaf)" : "") + ` · sweep ${t.sweeps}`;
    document.body.dataset.refreshed = String((Number(document.body.dataset.refreshed) || 0) + 1);
  }

  function live() {
    if (!window.EventSource) return;
    const es = new EventSource("/api/v1/events");
    const on = (v) => { $("live").textContent = v ? "● live" : "○ offline"; $("live").className = v ? "on" : ""; };
    es.onopen = () => on(true);
    es.onerror = () => on(false);
    const endsOf = (ev) => {
      try {
        const d = JSON.parse(ev.data).data;
        return linkId(d.a.guid, d.a.port, d.b.guid, d.b.port);
      } catch (e) {
        return null;
      }
    };
    es.addEventListener("link_down", (ev) => {
      const id = endsOf(ev);
      if (id) {
        state.downed.add(id);
        paintLink(id);
      }
      refetchSoon(800);
    });
    for (const type of ["link_up", "links_changed", "sweep_finished", "counters", "congestion",
                        "port_unhealthy", "port_healthy", "port_added", "port_removed"])
      es.addEventListener(type, () => refetchSoon(type === "counters" || type === "congestion" ? 200 : 500));
  }

  // --- start -----------------------------------------------------------------

  async function start() {
    panZoom();
    $("fabric").addEventListener("click", () => select(null));
    $("route-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const s = $("route-src").value.trim(), d = $("route-dst").value.trim();
      if (s && d) trace(s, d);
    });
    $("route-clear").addEventListener("click", () => {
      state.route = null;
      $("route").textContent = "";
      $("route-out").textContent = "";
    });
    const r = params.get("route");
    if (r && r.includes(",")) {
      const [s, d] = r.split(",");
      $("route-src").value = s;
      $("route-dst").value = d;
      state.route = [s, d];
    }
    try {
      render(await api("/api/v1/topology"));
    } catch (e) {
      $("stats").textContent = "fabric: " + e.message;
      $("stats").className = "error";
      setTimeout(start, 2000);
      return;
    }
    live();
  }

  start();
})();
