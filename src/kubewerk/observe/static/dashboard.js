// kubewerk dashboard: a small client for the JSON API beside this file.
// Everything shown is inserted as text nodes (textContent / createTextNode), never as
// markup, so names, labels and messages from the cluster cannot become HTML or script.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const main = document.getElementById("main");
  let version = -1;
  let inFlight = false;
  let again = false;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "href") node.setAttribute("href", v);
      else node.setAttribute(k, String(v));
    }
    append(node, children);
    return node;
  }

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    append(node, children);
    return node;
  }

  function append(node, children) {
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
  }

  function objectLink(o, text) {
    return el("a", { href: "#/object/" + encodeURIComponent(o.id) }, text || label(o));
  }

  function label(o) {
    return o.kind + "/" + (o.namespace ? o.namespace + "/" : "") + o.name;
  }

  function readyCell(ready) {
    if (ready === "True") return el("span", { class: "ok" }, "True");
    if (ready === "False") return el("span", { class: "bad" }, "False");
    return el("span", { class: "muted" }, ready || "—");
  }

  async function getJSON(path) {
    const resp = await fetch(path, { headers: { accept: "application/json" }, cache: "no-store" });
    if (!resp.ok) throw new Error(path + ": " + resp.status);
    return resp.json();
  }

  function table(headers, rows, rowClass) {
    return el("table", {},
      el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
      el("tbody", {}, rows.map((r, i) => el("tr", { class: rowClass ? rowClass(i) : null }, r.map((c) => el("td", {}, c))))));
  }

  function eventsList(events) {
    if (!events || !events.length) return el("span", { class: "muted" }, "no events");
    return el("ul", {}, events.map((e) =>
      el("li", {}, el("span", { class: e.type === "Warning" ? "warn" : "muted" }, e.time + " " + e.type + " " + e.reason + ": "),
        e.message, e.count > 1 ? " (x" + e.count + ")" : "")));
  }

  // -- views ------------------------------------------------------------------------

  function renderSummary(doc) {
    document.getElementById("cluster").textContent = doc.cluster;
    const out = [];
    out.push(el("h2", {}, "Stuck objects (" + doc.stuckTotal + ")"));
    if (!doc.stuck.length) {
      out.push(el("p", { class: "ok", id: "no-stuck" }, "Nothing is stuck."));
    } else {
      out.push(el("div", { id: "stuck" }, table(["object", "phase", "ready", "reason", "last events"],
        doc.stuck.map((s) => [
          objectLink(s),
          s.phase || "—",
          readyCell(s.ready),
          s.reasons.map((r) => el("div", {}, el("span", { class: "bad" }, r.reason), " ", r.message)),
          eventsList(s.events),
        ]), () => "stuck")));
    }
    out.push(el("h2", {}, "Kinds"));
    out.push(el("div", { id: "kinds" }, table(["kind", "objects", "phases", "Ready", "stuck"],
      doc.kinds.map((k) => [
        el("span", { title: k.group }, k.label),
        String(k.total),
        [Object.entries(k.phases).map(([p, n]) => el("span", { class: "pill" }, p + " " + n)),
          k.error ? el("div", { class: "error" }, k.error) : null],
        el("span", {}, el("span", { class: "ok" }, String(k.ready.True)), " / ",
          el("span", { class: k.ready.False ? "bad" : "muted" }, String(k.ready.False)), " / ",
          el("span", { class: "muted" }, String(k.ready.Unknown + k.ready.None))),
        k.stuck ? el("span", { class: "bad" }, String(k.stuck)) : "0",
      ]))));
    out.push(el("p", { class: "muted" }, "Ready: True / False / unknown or none. Generated " + doc.generatedAt + "."));
    main.replaceChildren(...out);
  }

  function refsTable(items, what) {
    if (!items.length) return el("p", { class: "muted" }, "no " + what);
    return table(["object", "field", "present", "phase", "ready"], items.map((d) => [
      d.present === false ? el("span", { class: "bad" }, label(d) + " (missing)") : objectLink(d),
      d.path || (d.controller ? "controller" : ""),
      d.present === null ? el("span", { class: "muted" }, "not watched") : String(d.present),
      d.phase || "—",
      readyCell(d.ready),
    ]));
  }

  function renderObject(doc) {
    const out = [el("h2", {}, label(doc))];
    if (!doc.object) {
      out.push(el("p", { class: "bad" }, "This object is not there (deleted, or not watched)."));
    } else {
      out.push(el("p", {}, "phase: ", el("strong", {}, doc.phase || "—"), "   Ready: ", readyCell(doc.ready)));
    }
    if (doc.stuck.length) {
      out.push(el("div", { id: "why" }, doc.stuck.map((s) => el("p", {}, el("span", { class: "bad" }, s.reason + ": "), s.message))));
    }
    if (doc.cycle.length) out.push(el("p", { class: "bad" }, "On a dependency cycle: " + doc.cycle.join(" -> ")));
    out.push(el("h2", {}, "Conditions"));
    out.push(doc.conditions.length ? table(["type", "status", "reason", "message", "since"],
      doc.conditions.map((c) => [String(c.type), readyCell(String(c.status)), String(c.reason || ""), String(c.message || ""), String(c.lastTransitionTime || "")]))
      : el("p", { class: "muted" }, "no conditions"));
    out.push(el("h2", {}, "Phase history"));
    out.push(doc.phaseHistory.length ? el("ol", {}, doc.phaseHistory.map((h) => el("li", {}, h.time + " " + h.message)))
      : el("p", { class: "muted" }, "no PhaseChanged events"));
    out.push(el("h2", {}, "Dependencies"), refsTable(doc.dependencies, "dependencies"));
    out.push(el("p", {}, el("a", { href: "#/graph/root/" + encodeURIComponent(doc.id) }, "graph around this object")));
    out.push(el("h2", {}, "Dependents"), refsTable(doc.dependents, "dependents"));
    out.push(el("h2", {}, "Owners"), refsTable(doc.owners, "owners"));
    out.push(el("h2", {}, "Children"), refsTable(doc.children, "children"));
    out.push(el("h2", {}, "Events"), eventsList(doc.events));
    if (doc.object) {
      out.push(el("h2", {}, "Spec"), el("pre", {}, JSON.stringify(doc.object.spec ?? null, null, 2)));
      out.push(el("h2", {}, "Status"), el("pre", {}, JSON.stringify(doc.object.status ?? null, null, 2)));
      out.push(el("h2", {}, "Metadata"), el("pre", {}, JSON.stringify(doc.object.metadata ?? null, null, 2)));
    }
    main.replaceChildren(...out);
  }

  function renderGraph(doc, scope) {
    const input = el("input", { id: "graph-ns", placeholder: "namespace (empty: all)", value: scope.ns || "" });
    const button = el("button", { type: "button" }, "show");
    button.addEventListener("click", () => { location.hash = input.value ? "#/graph/ns/" + encodeURIComponent(input.value) : "#/graph"; });
    const out = [el("h2", {}, "Dependency graph" + (scope.ns ? " of namespace " + scope.ns : scope.root ? " around " + scope.root : "")),
      el("div", { class: "inline" }, input, button)];
    if (doc.cycles.length) out.push(el("div", { class: "bad", id: "cycles" }, doc.cycles.map((c) => el("div", {}, "cycle: " + c.join(" -> ")))));
    if (doc.truncated) out.push(el("p", { class: "warn" }, "Only the first " + doc.nodes.length + " objects are drawn."));
    if (!doc.nodes.length) { out.push(el("p", { class: "muted" }, "No objects with refs here.")); main.replaceChildren(...out); return; }
    const w = doc.nodeWidth, h = doc.nodeHeight;
    const pos = new Map(doc.nodes.map((n) => [n.id, n]));
    const image = svg("svg", { width: doc.width, height: doc.height, viewBox: "0 0 " + doc.width + " " + doc.height, role: "img" });
    image.appendChild(svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto-start-reverse" },
      svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#8c959f" }))));
    for (const e of doc.edges) {
      const a = pos.get(e.from), b = pos.get(e.to);
      if (!a || !b) continue;
      // from the referrer's left side to the target's right side (targets sit to the left)
      const x1 = a.x, y1 = a.y + h / 2, x2 = b.x + w, y2 = b.y + h / 2;
      const mid = (x1 + x2) / 2;
      const path = svg("path", { class: "edge" + (e.onCycle ? " cycle" : ""), d: `M ${x1} ${y1} C ${mid} ${y1}, ${mid} ${y2}, ${x2} ${y2}`, "marker-end": "url(#arrow)" });
      path.appendChild(svg("title", {}, e.path));
      image.appendChild(path);
    }
    for (const n of doc.nodes) {
      const cls = "node" + (n.onCycle ? " cycle" : "") + (n.present === false ? " missing" : "") + (n.ready === "False" ? " notready" : "");
      const g = svg("g", { class: cls, transform: `translate(${n.x},${n.y})` });
      const text1 = n.kind + "/" + n.name;
      g.appendChild(svg("title", {}, label(n) + (n.phase ? " [" + n.phase + "]" : "") + (n.present === false ? " (missing)" : "")));
      g.appendChild(svg("rect", { width: w, height: h, rx: 4 }));
      g.appendChild(svg("text", { x: 6, y: 14 }, text1.length > 30 ? text1.slice(0, 29) + "…" : text1));
      g.appendChild(svg("text", { x: 6, y: 29, class: "muted" }, (n.namespace || "cluster") + " · " + (n.phase || (n.present === false ? "missing" : "—"))));
      g.addEventListener("click", () => { location.hash = "#/object/" + encodeURIComponent(n.id); });
      image.appendChild(g);
    }
    out.push(el("div", { id: "graph" }, image));
    main.replaceChildren(...out);
  }

  function sparkline(values, width, height) {
    const nums = values.map((v) => (v === null ? null : Number(v)));
    const max = Math.max(1e-9, ...nums.filter((v) => v !== null));
    const step = nums.length > 1 ? width / (nums.length - 1) : 0;
    let d = "";
    nums.forEach((v, i) => {
      if (v === null) return;
      d += (d ? " L " : "M ") + (i * step).toFixed(1) + " " + (height - (v / max) * (height - 4) - 2).toFixed(1);
    });
    return svg("svg", { width, height, viewBox: `0 0 ${width} ${height}` },
      svg("line", { class: "chart-axis", x1: 0, y1: height - 1, x2: width, y2: height - 1 }),
      d ? svg("path", { class: "chart-line", d }) : null);
  }

  function last(values) {
    for (let i = values.length - 1; i >= 0; i--) if (values[i] !== null) return values[i];
    return null;
  }

  function renderMetrics(doc) {
    const out = [el("h2", {}, "Controllers")];
    if (doc.error) out.push(el("p", { class: "error" }, "scrape failed: " + doc.error));
    const names = Object.keys(doc.controllers || {});
    if (!names.length) {
      out.push(el("p", { class: "muted" }, doc.sources === 0 ? "No operator /metrics given (kubewerk dashboard --metrics-url URL)." : "Waiting for two scrapes…"));
    }
    const charts = [
      ["reconciles/s", "rate", (v) => v.toFixed(2)],
      ["errors/s", "errors", (v) => v.toFixed(2)],
      ["queue depth", "depth", (v) => String(v)],
      ["mean latency", "latency", (v) => (v * 1000).toFixed(1) + " ms"],
    ];
    out.push(el("div", { class: "grid" }, names.map((name) => {
      const s = doc.controllers[name];
      return el("div", { class: "card" }, el("h3", {}, name), charts.map(([title, key, fmt]) => {
        const v = last(s[key]);
        return el("div", {}, el("div", {}, title + ": ", v === null ? "—" : fmt(v)), sparkline(s[key], 280, 36));
      }));
    })));
    main.replaceChildren(...out);
  }

  // -- routing and live updates ------------------------------------------------------

  function route() {
    const hash = location.hash.replace(/^#/, "") || "/";
    const parts = hash.split("/").filter(Boolean).map(decodeURIComponent);
    if (parts[0] === "object" && parts[1]) return { view: "object", id: parts.slice(1).join("/") };
    if (parts[0] === "graph") return { view: "graph", ns: parts[1] === "ns" ? parts[2] : null, root: parts[1] === "root" ? parts.slice(2).join("/") : null };
    if (parts[0] === "metrics") return { view: "metrics" };
    return { view: "summary" };
  }

  async function refresh() {
    if (inFlight) { again = true; return; }
    inFlight = true;
    try {
      const r = route();
      if (r.view === "object") renderObject(await getJSON("api/object?id=" + encodeURIComponent(r.id)));
      else if (r.view === "graph") {
        const q = r.ns ? "?namespace=" + encodeURIComponent(r.ns) : r.root ? "?root=" + encodeURIComponent(r.root) : "";
        renderGraph(await getJSON("api/graph" + q), r);
      } else if (r.view === "metrics") renderMetrics(await getJSON("api/metrics"));
      else renderSummary(await getJSON("api/summary"));
      document.body.setAttribute("data-version", String(version));
    } catch (err) {
      main.replaceChildren(el("p", { class: "error" }, String(err.message || err)));
    } finally {
      inFlight = false;
      if (again) { again = false; refresh(); }
    }
  }

  function connect() {
    const live = document.getElementById("live");
    const source = new EventSource("api/stream");
    source.addEventListener("change", (ev) => {
      const data = JSON.parse(ev.data);
      live.textContent = "live"; live.className = "live on";
      if (data.version !== version) { version = data.version; refresh(); }
    });
    source.addEventListener("error", () => { live.textContent = "reconnecting"; live.className = "live off"; });
  }

  window.addEventListener("hashchange", refresh);
  setInterval(() => { if (route().view === "metrics") refresh(); }, 2000);
  refresh();
  connect();
})();
