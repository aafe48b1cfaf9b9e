// The pages of `smdebug serve`: the runs list, a run, and the compare view. Everything is
// read from the server's JSON API; live changes arrive over server-sent events.
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token");
const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#db2777", "#65a30d", "#4b5563", "#ca8a04"];
const app = document.getElementById("app");
let page = null; // what the current page must close when it is left

function withToken(path) {
  if (!TOKEN) return path;
  return path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(TOKEN);
}

async function api(path) {
  const r = await fetch(withToken(path));
  const body = await r.json().catch(() => ({ error: "HTTP " + r.status }));
  if (!r.ok && !body.error) body.error = "HTTP " + r.status;
  return body;
}

function stream(path, handlers) {
  const es = new EventSource(withToken(path));
  const dot = document.getElementById("live");
  es.onopen = () => dot.classList.add("on");
  es.onerror = () => dot.classList.remove("on");
  for (const [name, f] of Object.entries(handlers)) {
    es.addEventListener(name, (e) => f(JSON.parse(e.data)));
  }
  return es;
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function errorBox(text) {
  return el("div", { class: "error", role: "alert" }, text);
}

function statusCell(s) {
  return el("span", { class: "status " + s.status }, s.status);
}

// ---------------------------------------------------------------- runs page

function rulesCell(run) {
  const fired = Object.entries(run.rules).map(([rule, v]) =>
    v.fired ? el("span", { class: "badge fired", title: "first at step " + v.first_step }, rule + " ×" + v.fired) : null);
  const error = run.rules_error ? el("span", { class: "badge error", title: run.rules_error }, "rules could not run") : null;
  return [...fired, error];
}

function firstFiring(run) {
  const f = run.first_firing;
  return f ? f.rule + " at step " + f.step : "";
}

const COLUMNS = [
  ["name", "Run", (r) => r.name],
  ["status", "Status", (r) => r.status],
  ["last_step", "Last step", (r) => r.last_step ?? -1],
  ["steps", "Steps", (r) => r.steps],
  ["modes", "Modes", (r) => r.modes.join(" ")],
  ["workers", "Workers", (r) => r.workers],
  ["rules", "Rules fired", (r) => Object.values(r.rules).reduce((a, v) => a + v.fired, 0)],
  ["first", "First firing", (r) => (r.first_firing ? r.first_firing.step : Infinity)],
];

async function runsPage() {
  const state = { runs: new Map(), sort: "name", asc: true, filter: "", group: false, chosen: new Set() };
  const body = await api("/api/runs");
  if (body.error) { app.replaceChildren(errorBox(body.error)); return; }
  for (const r of body.runs) state.runs.set(r.id, r);
  const filter = el("input", { type: "text", id: "filter", placeholder: "filter runs (regular expression)" });
  const group = el("input", { type: "checkbox", id: "group" });
  const compare = el("button", { id: "compare-chosen", disabled: true }, "Compare chosen");
  const count = el("span", { class: "muted", id: "count" });
  const table = el("table", { id: "runs" });
  const problems = [body.discovery_error, body.rules_error].filter(Boolean).map(errorBox);
  app.replaceChildren(
    el("h1", {}, "Runs"),
    el("p", { class: "muted" }, "Serving " + body.paths.join(", ") + (body.rules.length ? " · rules: " + body.rules.join(", ") : "")),
    ...problems,
    el("div", { class: "controls" }, filter, el("label", {}, group, " group by folder"), compare, count),
    table,
  );
  let pending = false;
  const render = () => {
    pending = false;
    let re = null;
    try { re = state.filter ? new RegExp(state.filter, "i") : null; filter.setCustomValidity(""); }
    catch (e) { filter.setCustomValidity(e.message); }
    const col = COLUMNS.find((c) => c[0] === state.sort);
    const rows = [...state.runs.values()].filter((r) => !re || re.test(r.name));
    rows.sort((a, b) => {
      const x = col[2](a), y = col[2](b);
      const c = x < y ? -1 : x > y ? 1 : a.name < b.name ? -1 : 1;
      return state.asc ? c : -c;
    });
    if (state.group) rows.sort((a, b) => (a.folder < b.folder ? -1 : a.folder > b.folder ? 1 : 0));
    const head = el("tr", {}, el("th", {}, ""), COLUMNS.map(([key, title]) =>
      el("th", {
        class: key === state.sort ? "sorted" + (state.asc ? " asc" : "") : null,
        "data-key": key,
        onclick: () => { state.asc = state.sort === key ? !state.asc : true; state.sort = key; render(); },
      }, title)));
    const out = [head];
    let folder = null;
    for (const r of rows) {
      if (state.group && r.folder !== folder) {
        folder = r.folder;
        out.push(el("tr", { class: "group" }, el("td", { colspan: COLUMNS.length + 1 }, folder || "(top)")));
      }
      const box = el("input", { type: "checkbox", checked: state.chosen.has(r.id), onchange: (e) => {
        if (e.target.checked) state.chosen.add(r.id); else state.chosen.delete(r.id);
        compare.disabled = state.chosen.size < 2;
      } });
      out.push(el("tr", { class: "run", "data-id": r.id, "data-status": r.status },
        el("td", {}, box),
        el("td", {}, el("a", { href: "#/run/" + r.id }, r.name), r.error ? el("div", { class: "error" }, r.error) : null),
        el("td", {}, statusCell(r)),
        el("td", {}, r.last_step ?? ""),
        el("td", {}, r.steps),
        el("td", {}, r.modes.join(" ")),
        el("td", {}, r.workers || ""),
        el("td", {}, rulesCell(r)),
        el("td", {}, firstFiring(r)),
      ));
    }
    table.replaceChildren(...out);
    count.textContent = rows.length + " of " + state.runs.size + " runs";
  };
  const later = () => { if (!pending) { pending = true; setTimeout(render, 200); } };
  filter.addEventListener("input", () => { state.filter = filter.value; render(); });
  group.addEventListener("change", () => { state.group = group.checked; render(); });
  compare.addEventListener("click", () => { location.hash = "#/compare?runs=" + [...state.chosen].join(","); });
  render();
  const es = stream("/api/events", { run: (e) => { state.runs.set(e.run.id, e.run); later(); } });
  page = { close: () => es.close() };
}

// ---------------------------------------------------------------- charts

function smooth(values, weight) {
  if (!weight) return values;
  let last = null;
  return values.map((v) => {
    if (v === null || v === undefined) return v;
    last = last === null ? v : last * weight + (1 - weight) * v;
    return last;
  });
}

// A line chart of series `{label, steps, values}` over one step axis, with the rule
// firings marked on it.
class LineChart {
  constructor(title, opts) {
    this.title = title;
    this.opts = opts;
    this.series = [];
    this.firings = [];
    this.root = el("div", { class: "chart", "data-title": title, "data-points": 0 });
    this.root.append(el("h3", {}, title));
    this.plotBox = el("div", {});
    this.marks = el("div", { class: "marks" });
    this.root.append(this.plotBox, this.marks);
    this.plot = null;
  }

  setSeries(series) {
    this.series = series.map((s) => ({ label: s.label, steps: [...s.steps], values: [...s.values] }));
    this.redraw(true);
  }

  // Adds points after the series' last step; a new label is a new line unless `known`
  // (a norm chart keeps the layers it was drawn with).
  append(label, steps, values, known) {
    let s = this.series.find((x) => x.label === label);
    if (!s && known) return;
    if (!s) { s = { label, steps: [], values: [] }; this.series.push(s); this.redraw(true); }
    const last = s.steps.length ? s.steps[s.steps.length - 1] : -Infinity;
    for (let i = 0; i < steps.length; i++) {
      if (steps[i] > last) { s.steps.push(steps[i]); s.values.push(values[i]); }
    }
    this.redraw(false);
  }

  setFirings(firings) {
    this.firings = firings;
    this.redraw(false);
  }

  data() {
    const log = this.opts.log && this.opts.log();
    const w = this.opts.smoothing ? this.opts.smoothing() : 0;
    const tables = this.series.map((s) => [s.steps, smooth(s.values, w).map((v) => (log && v !== null && v <= 0 ? null : v))]);
    if (!tables.length) return [[]];
    return tables.length === 1 ? tables[0] : uPlot.join(tables, tables.map(() => [1]));
  }

  redraw(rebuild) {
    const points = this.series.reduce((a, s) => a + s.steps.length, 0);
    this.root.dataset.points = points;
    this.root.dataset.lastStep = this.series.reduce((a, s) => Math.max(a, s.steps.length ? s.steps[s.steps.length - 1] : -1), -1);
    if (!this.plot || rebuild) {
      if (this.plot) this.plot.destroy();
      const log = this.opts.log && this.opts.log();
      const self = this;
      this.plot = new uPlot({
        width: this.opts.width || 520,
        height: this.opts.height || 220,
        scales: { x: { time: false }, y: log ? { distr: 3 } : {} },
        axes: [{ label: "step" }, {}],
        series: [{ label: "step" }, ...this.series.map((s, i) => ({
          label: s.label, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: false, points: { show: false },
        }))],
        plugins: [{ hooks: { draw: [(u) => { self.drawFirings(u); self.placeMarks(); }] } }],
      }, this.data(), this.plotBox);
    } else {
      this.plot.setData(this.data());
    }
  }

  drawFirings(u) {
    const ctx = u.ctx;
    ctx.save();
    ctx.strokeStyle = "rgba(220,38,38,0.7)";
    ctx.lineWidth = 1;
    for (const f of this.firings) {
      const x = u.valToPos(f.step, "x", true);
      if (!Number.isFinite(x) || x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
      ctx.beginPath();
      ctx.moveTo(x, u.bbox.top);
      ctx.lineTo(x, u.bbox.top + u.bbox.height);
      ctx.stroke();
    }
    ctx.restore();
  }

  // The firings as elements under the plot, at their steps (what a reader of the page's
  // DOM finds, beside the lines drawn on the canvas).
  placeMarks() {
    const u = this.plot;
    if (!u) return;
    // The plot area starts after the y axis (uPlot places its overlay there); the plot's
    // box and the marks' row start at the same left edge.
    const shift = parseFloat(u.over.style.left) || 0;
    const width = u.over.clientWidth || u.bbox.width;
    const marks = this.firings.map((f) => {
      const at = u.valToPos(f.step, "x");
      // A firing after the last step drawn waits for its step's points.
      if (!(at >= 0 && at <= width)) return null;
      const x = at + shift;
      return el("span", {
        class: "firing-mark", "data-step": f.step, "data-rule": f.rule,
        title: f.rule + " at step " + f.step + ": " + f.message, style: "left:" + (Number.isFinite(x) ? x : 0) + "px",
      });
    });
    this.marks.replaceChildren(...marks.filter(Boolean));
    this.root.dataset.firings = this.firings.length;
  }
}

// A layer × step heatmap of norms: one row per chart, log colour scale over every cell.
function heatmap(charts) {
  const steps = [...new Set(charts.flatMap((c) => c.series[0] ? c.series[0].steps : []))].sort((a, b) => a - b);
  if (!steps.length) return null;
  const col = new Map(steps.map((s, i) => [s, i]));
  const cell = Math.max(2, Math.min(12, Math.floor(900 / steps.length)));
  const rowH = 12;
  const canvas = el("canvas", { class: "heatmap", width: steps.length * cell, height: charts.length * rowH, "data-rows": charts.length, "data-columns": steps.length });
  const ctx = canvas.getContext("2d");
  let lo = Infinity, hi = -Infinity;
  for (const c of charts) for (const v of (c.series[0] || { values: [] }).values) {
    if (v !== null && v > 0) { lo = Math.min(lo, Math.log10(v)); hi = Math.max(hi, Math.log10(v)); }
  }
  charts.forEach((c, r) => {
    const s = c.series[0];
    if (!s) return;
    s.steps.forEach((step, i) => {
      const v = s.values[i];
      let color = "#fca5a5";
      if (v !== null && v > 0) {
        const t = hi > lo ? (Math.log10(v) - lo) / (hi - lo) : 0.5;
        color = "hsl(" + (240 - 200 * t) + ",70%," + (25 + 45 * t) + "%)";
      } else if (v === 0) color = "#111827";
      ctx.fillStyle = color;
      ctx.fillRect(col.get(step) * cell, r * rowH, cell, rowH);
    });
  });
  const labels = el("div", { class: "heatmap-labels" }, charts.map((c) => el("div", { style: "height:" + rowH + "px;line-height:" + rowH + "px" }, c.title)));
  return el("div", {},
    el("div", { class: "heatmap-wrap" }, labels, canvas),
    el("p", { class: "muted" }, "steps " + steps[0] + "–" + steps[steps.length - 1] + "; colour: log₁₀ norm from " + lo.toFixed(2) + " (blue) to " + hi.toFixed(2) + " (yellow); red: not finite"));
}

function multiLine(title, charts, opts) {
  const c = new LineChart(title, opts);
  c.setSeries(charts.filter((x) => x.series[0]).map((x) => ({ label: x.title, steps: x.series[0].steps, values: x.series[0].values })));
  return c;
}

// ---------------------------------------------------------------- run page

async function runPage(id) {
  const view = { log: false, smoothing: 0 };
  const opts = { log: () => view.log, smoothing: () => view.smoothing };
  let scalarCharts = new Map();
  let normCharts = new Map();
  let firings = [];
  let lastFull = 0;
  let refetchTimer = null;

  const head = el("div", {});
  const body = el("div", {});
  const logBox = el("input", { type: "checkbox", id: "log" });
  const smoothing = el("input", { type: "range", id: "smoothing", min: 0, max: 0.99, step: 0.01, value: 0 });
  app.replaceChildren(head, el("div", { class: "controls" },
    el("label", {}, logBox, " log scale"),
    el("label", {}, "smoothing ", smoothing)), body);

  const renderHead = (s, error) => {
    head.replaceChildren(
      el("h1", {}, s.name),
      el("div", { class: "summary" },
        el("div", {}, el("span", {}, "status"), statusCell(s)),
        el("div", {}, el("span", {}, "last step"), el("b", { id: "last-step" }, s.last_step ?? "–")),
        el("div", {}, el("span", {}, "steps"), s.steps),
        el("div", {}, el("span", {}, "modes"), s.modes.join(" ") || "–"),
        el("div", {}, el("span", {}, "workers"), s.workers || "–"),
        el("div", {}, el("span", {}, "rules"), rulesCell(s))),
      ...[s.error, error].filter(Boolean).map(errorBox));
  };

  const full = async () => {
    lastFull = Date.now();
    const d = await api("/api/runs/" + id + "?width=" + Math.max(400, Math.floor(window.innerWidth)));
    if (!d.summary) { app.replaceChildren(errorBox(d.error || "no such run")); return; }
    renderHead(d.summary, d.error);
    firings = d.firings || [];
    if (!d.data) { body.replaceChildren(); return; }
    const data = d.data;
    scalarCharts = new Map();
    normCharts = new Map();
    const sections = [];
    const scalars = data.scalars.map((c) => { const lc = new LineChart(c.title, opts); lc.setSeries(c.series); lc.setFirings(firings); scalarCharts.set(c.title, lc); return lc.root; });
    sections.push(el("section", { id: "scalars" }, el("h2", {}, "Loss and scalars"), scalars.length ? el("div", { class: "charts" }, scalars) : el("p", { class: "muted" }, "No loss or scalar tensor.")));
    for (const [key, title] of [["gradient_norms", "Gradient norms per layer"], ["weight_norms", "Weight norms per layer"]]) {
      if (!data[key].length) continue;
      const lines = multiLine(title, data[key], { ...opts, width: 700, height: 260 });
      lines.setFirings(firings);
      normCharts.set(key, lines);
      sections.push(el("section", { id: key }, el("h2", {}, title), el("div", { class: "charts" }, lines.root), heatmap(data[key])));
    }
    if (data.update_ratios.length) {
      sections.push(el("section", { id: "update_ratios" }, el("h2", {}, "Update-to-weight ratio"), multiLine("‖Δw‖ / ‖w‖", data.update_ratios, { ...opts, width: 700, height: 260 }).root));
    }
    if (data.activations.length) {
      sections.push(el("section", { id: "activations" }, el("h2", {}, "Activations (dead or saturated fraction)"), multiLine("fraction", data.activations, { width: 700, height: 220 }).root));
    }
    sections.push(histogramSection(id));
    if (data.completeness) sections.push(completenessSection(data.completeness));
    sections.push(healthSection(id, data.health));
    sections.push(firingsSection(firings));
    body.replaceChildren(...sections);
  };

  const scheduleFull = () => {
    if (refetchTimer) return;
    const wait = Math.max(0, 5000 - (Date.now() - lastFull));
    refetchTimer = setTimeout(() => { refetchTimer = null; full(); }, wait);
  };

  logBox.addEventListener("change", () => { view.log = logBox.checked; for (const c of scalarCharts.values()) c.redraw(true); });
  smoothing.addEventListener("input", () => { view.smoothing = Number(smoothing.value); for (const c of scalarCharts.values()) c.redraw(false); });

  await full();
  const es = stream("/api/events?run=" + encodeURIComponent(id), {
    run: (e) => { renderHead(e.run); scheduleFull(); },
    points: (e) => {
      if (e.kind !== "scalars") {
        // One line per layer: the series is the layer's norm, labelled by the tensor.
        const c = normCharts.get(e.kind);
        if (c) for (const s of e.series) c.append(e.tensor, s.steps, s.values, true);
        return;
      }
      const c = scalarCharts.get(e.tensor);
      if (!c) { scheduleFull(); return; }
      for (const s of e.series) c.append(s.label, s.steps, s.values);
    },
    firing: (e) => {
      firings.push(e.firing);
      for (const c of [...scalarCharts.values(), ...normCharts.values()]) c.setFirings(firings);
      const t = document.getElementById("firings-table");
      if (t) t.append(firingRow(e.firing));
    },
    resync: () => full(),
  });
  page = { close: () => { es.close(); if (refetchTimer) clearTimeout(refetchTimer); } };
}

function histogramSection(id) {
  const section = el("section", { id: "histogram" }, el("h2", {}, "Histogram at a step"));
  const select = el("select", { id: "histogram-tensor" });
  const slider = el("input", { type: "range", id: "histogram-step", min: 0, max: 0, value: 0 });
  const label = el("span", { id: "histogram-step-label" });
  const box = el("div", {});
  section.append(el("div", { class: "controls" }, select, slider, label), box);
  let tensors = [];
  let plot = null;
  let seq = 0;
  const draw = async () => {
    const t = tensors[select.selectedIndex];
    if (!t || !t.steps.length) return;
    const step = t.steps[Number(slider.value)];
    label.textContent = "step " + step;
    const mine = ++seq;
    const r = await api("/api/runs/" + id + "/histogram?tensor=" + encodeURIComponent(t.name) + "&step=" + step + "&bins=40");
    if (mine !== seq) return;
    if (r.error) { box.replaceChildren(errorBox(r.error)); plot = null; return; }
    const h = r.histogram;
    const mids = h.counts.map((_, i) => (h.edges[i] + h.edges[i + 1]) / 2);
    if (plot) plot.destroy();
    box.replaceChildren();
    plot = new uPlot({
      width: 700, height: 220, scales: { x: { time: false } },
      axes: [{ label: t.name, values: (u, vals) => vals.map((v) => Number(v.toPrecision(3)).toString()) }, { label: "count" }],
      series: [{}, { label: "count", stroke: COLORS[0], fill: "rgba(37,99,235,0.3)", paths: uPlot.paths.bars({ size: [0.95, 100] }), points: { show: false } }],
    }, [mids, h.counts], box);
    box.dataset.step = step;
    box.dataset.total = h.counts.reduce((a, b) => a + b, 0);
    if (h.non_finite) box.append(el("p", { class: "muted" }, h.non_finite + " non-finite value(s) left out"));
  };
  api("/api/runs/" + id + "/tensors").then((r) => {
    if (r.error) { box.replaceChildren(errorBox(r.error)); return; }
    tensors = r.tensors.filter((t) => t.steps.length);
    select.replaceChildren(...tensors.map((t) => el("option", {}, t.name)));
    const pick = tensors.findIndex((t) => /weight|gradient/i.test(t.name));
    if (pick >= 0) select.selectedIndex = pick;
    const reset = () => { const t = tensors[select.selectedIndex]; slider.max = t ? t.steps.length - 1 : 0; slider.value = slider.max; draw(); };
    select.addEventListener("change", reset);
    slider.addEventListener("input", draw);
    reset();
  });
  return section;
}

function completenessSection(c) {
  const cell = 12;
  const canvas = el("canvas", { class: "heatmap", width: Math.max(1, c.column_steps.length) * cell, height: c.row_labels.length * cell });
  const ctx = canvas.getContext("2d");
  c.fraction.forEach((row, r) => row.forEach((f, i) => {
    ctx.fillStyle = f >= 1 ? "#16a34a" : f <= 0 ? "#dc2626" : "hsl(" + 120 * f + ",70%,45%)";
    ctx.fillRect(i * cell, r * cell, cell, cell);
  }));
  const labels = el("div", { class: "heatmap-labels" }, c.row_labels.map((l) => el("div", { style: "height:" + cell + "px;line-height:" + cell + "px" }, l)));
  return el("section", { id: "completeness" }, el("h2", {}, "Worker completeness"),
    el("div", { class: "heatmap-wrap" }, labels, canvas),
    el("p", { class: "muted" }, c.workers + " workers; " + c.missing_count + " (worker, step) pair(s) missing" +
      (c.missing.length ? ": " + c.missing.slice(0, 10).map(([w, s]) => w + "@" + s).join(", ") : "")));
}

function healthSection(id, findings) {
  const list = el("ul", { id: "findings" }, findings.map((f) => el("li", {}, "step " + f.step + (f.tensor ? " · " + f.tensor : "") + " · " + f.source + ": " + f.message)));
  const first = el("div", { id: "first-non-finite" }, el("p", { class: "muted" }, "Scanning for the first non-finite value…"));
  api("/api/runs/" + id + "/health").then((r) => {
    if (r.error) { first.replaceChildren(errorBox(r.error)); return; }
    const nf = r.health.first_non_finite;
    first.replaceChildren(nf
      ? errorBox("First non-finite value: " + nf.tensor + " at step " + nf.step + " (" + nf.mode + " step " + nf.mode_step + ", " + nf.worker + ")")
      : el("p", {}, "Every value read is finite (" + r.health.records_read + " records)."));
  });
  return el("section", { id: "health" }, el("h2", {}, "Health"), first, findings.length ? list : null);
}

function firingRow(f) {
  return el("tr", { class: "firing" }, el("td", {}, f.step), el("td", {}, f.mode ? f.mode + " " + f.mode_step : ""), el("td", {}, f.rule), el("td", {}, f.tensor || ""), el("td", {}, f.message));
}

function firingsSection(firings) {
  const table = el("table", { id: "firings-table" }, el("tr", {}, ["Step", "Mode step", "Rule", "Tensor", "Message"].map((t) => el("th", {}, t))), firings.map(firingRow));
  return el("section", { id: "firings" }, el("h2", {}, "Rule firings"), table);
}

// ---------------------------------------------------------------- compare

async function comparePage(query) {
  const params = new URLSearchParams(query);
  const all = await api("/api/runs");
  if (all.error) { app.replaceChildren(errorBox(all.error)); return; }
  const chosen = new Set((params.get("runs") || "").split(",").filter(Boolean));
  const kind = params.get("kind") || "scalars";
  const boxes = all.runs.map((r) => el("label", { style: "display:block" }, el("input", { type: "checkbox", value: r.id, checked: chosen.has(r.id), class: "compare-run" }), " " + r.name));
  const kindSel = el("select", { id: "compare-kind" }, ["scalars", "gradient_norms", "weight_norms", "update_ratios"].map((k) => el("option", { value: k, selected: k === kind }, k.replace("_", " "))));
  const chartSel = el("select", { id: "compare-chart" });
  const out = el("div", { id: "compare-out" });
  const go = () => {
    const ids = [...app.querySelectorAll(".compare-run:checked")].map((b) => b.value);
    const q = new URLSearchParams({ runs: ids.join(","), kind: kindSel.value });
    if (chartSel.value) q.set("chart", chartSel.value);
    location.hash = "#/compare?" + q.toString();
  };
  app.replaceChildren(el("h1", {}, "Compare"), el("div", { class: "controls" }, kindSel, chartSel, el("button", { onclick: go }, "Show")),
    el("details", { open: chosen.size < 2 }, el("summary", {}, "Runs"), boxes), out);
  kindSel.addEventListener("change", () => { chartSel.value = ""; go(); });
  chartSel.addEventListener("change", go);
  if (chosen.size === 0) { out.replaceChildren(el("p", { class: "muted" }, "Choose runs to overlay.")); return; }
  const r = await api("/api/compare?" + new URLSearchParams({ runs: [...chosen].join(","), kind, ...(params.get("chart") ? { chart: params.get("chart") } : {}), width: 1000 }));
  if (r.error) { out.replaceChildren(errorBox(r.error)); return; }
  const titles = [...new Set(r.runs.flatMap((x) => x.charts || []))];
  const title = params.get("chart") || titles[0];
  chartSel.replaceChildren(...titles.map((t) => el("option", { value: t, selected: t === title }, t)));
  if (!title) { out.replaceChildren(el("p", { class: "muted" }, "The chosen runs have no chart of this kind.")); return; }
  const data = params.get("chart") ? r : await api("/api/compare?" + new URLSearchParams({ runs: [...chosen].join(","), kind, chart: title, width: 1000 }));
  const series = [];
  const errors = [];
  for (const run of data.runs) {
    if (run.error) errors.push(errorBox(run.name + ": " + run.error));
    if (!run.chart) continue;
    for (const s of run.chart.series) series.push({ label: run.name + " · " + s.label, steps: s.steps, values: s.values });
  }
  const chart = new LineChart(title, { width: 900, height: 360 });
  chart.root.id = "compare-chart-plot";
  chart.root.dataset.runs = data.runs.filter((x) => x.chart).length;
  out.replaceChildren(...errors, chart.root);
  chart.setSeries(series);
}

// ---------------------------------------------------------------- routing

async function route() {
  if (page) { page.close(); page = null; }
  const hash = location.hash || "#/";
  app.replaceChildren(el("p", { class: "muted" }, "Loading…"));
  try {
    if (hash.startsWith("#/run/")) await runPage(decodeURIComponent(hash.slice(6)));
    else if (hash.startsWith("#/compare")) await comparePage(hash.split("?")[1] || "");
    else await runsPage();
    document.body.dataset.ready = "1";
  } catch (e) {
    app.replaceChildren(errorBox(String(e && e.stack || e)));
  }
}

window.addEventListener("hashchange", route);
route();
