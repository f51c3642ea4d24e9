/* hifo run page: the static report.html and the live dashboard (hifo ui) run this same script.
   Everything is drawn from one JSON document (agents/run_view.py). Text from the run (code, errors,
   prompts, principles) is only ever set with textContent, and escaped before Plotly sees it (Plotly
   reads a few HTML tags in labels), so it is shown verbatim and never interpreted as markup. */
(function () {
  "use strict";
  var MODE = JSON.parse(document.getElementById("hifo-mode").textContent);
  var state = {data: null, sel: null, sort: {key: "order", dir: 1}, stamp: null, prompts: {}};
  var DASH = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"];
  var SYMBOL = ["circle", "square", "diamond", "triangle-up", "x", "star", "cross", "triangle-down"];
  var REGIME = {explore: "#cfe8ff", exploit: "#d9f2d0", balance: "#fff3c4", repair: "#ffd6d6",
                diversify: "#eadcff", baseline: "#eeeeee"};
  var CONFIG = {displaylogo: false, responsive: true};

  function $(id) { return document.getElementById(id); }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }
  // for Plotly labels only: Plotly turns a few tags and entities into markup; these three make text literal
  function pt(s) { return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"); }
  function wrap(s, n) {  // escaped, then broken into lines for a hover box
    var words = pt(s).split(" "), lines = [], cur = "";
    words.forEach(function (w) { if ((cur + " " + w).length > n && cur) { lines.push(cur); cur = w; } else cur = cur ? cur + " " + w : w; });
    if (cur) lines.push(cur);
    return lines.join("<br>");
  }
  function fmt(v) { return v === null || v === undefined ? "" : (typeof v === "number" ? Number(v.toPrecision(6)).toString() : String(v)); }
  function short(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + "\u2026" : s; }
  function plot(id, traces, layout) {
    layout = Object.assign({margin: {l: 60, r: 20, t: 36, b: 44}, legend: {orientation: "h", y: -0.28}}, layout);
    Plotly.react($(id), traces, layout, CONFIG);
  }
  function principleText(d, pid) {
    for (var i = 0; i < d.principles.length; i++) if (d.principles[i].id === pid) return d.principles[i].text;
    return "";
  }

  function facts(d) {
    var t = clear($("facts")), b = d.best;
    var rows = [["run", d.dir], ["problem", d.problem], ["model", d.model], ["status", d.status + (d.stop_reason ? " (" + d.stop_reason + ")" : "")],
      ["candidates", Object.keys(d.counts).map(function (k) { return k + " " + d.counts[k]; }).join(", ")],
      ["evaluations", d.evaluations], ["model calls", d.model_calls]];
    t.appendChild(row([el("th", "best " + d.metric + " (train" + (b && b.train_set && b.train_set !== "train" ? " set: " + b.train_set : "") + ")"),
      cell(b ? fmt(b.train) : "no feasible candidate yet", "best-value")]));
    var test = b && b.test ? (b.test.objective !== null ? fmt(b.test.objective) + (b.test.note ? " — " + b.test.note : "")
      : "not scored: " + b.test.note) + " (" + b.test.set + ")"
      : (b ? "not scored yet (the run scores its best on the test set at the end)" : "");
    t.appendChild(row([el("th", "best on held-out test set"), cell(test, "test-value")]));
    if (b) t.appendChild(row([el("th", "best candidate"), cell(b.id + ", generation " + b.generation + ", " + b.operator)]));
    d.baselines.forEach(function (x) { t.appendChild(row([el("th", "baseline " + x.name), cell(fmt(x.objective))])); });
    rows.forEach(function (r) { t.appendChild(row([el("th", r[0]), cell(r[1])])); });
  }
  function row(cells) { var tr = el("tr"); cells.forEach(function (c) { tr.appendChild(c); }); return tr; }
  function cell(text, id) { var td = el("td", text); if (id) td.id = id; return td; }

  function bestPlots(d) {
    var c = d.curve, ys = c.best.filter(function (v) { return v !== null; });
    d.baselines.forEach(function (b) { if (b.objective !== null) ys.push(b.objective); });
    if (d.best && d.best.test && d.best.test.objective !== null) ys.push(d.best.test.objective);
    var lo = Math.min.apply(null, ys), hi = Math.max.apply(null, ys), pad = (hi - lo) * 0.08 || Math.abs(hi) * 0.05 || 1;
    // the range follows the running best and the reference lines: a bad generation's median cannot squash it
    var range = ys.length ? [lo - pad, hi + pad] : undefined;
    [["plot-best-evals", "evaluations", c.evaluations], ["plot-best-calls", "model calls", c.calls]].forEach(function (p) {
      var xs = p[2], xmax = Math.max.apply(null, xs.concat([1, p[1] === "model calls" ? d.model_calls : d.evaluations]));
      var traces = [{x: xs, y: c.best, name: "best so far", mode: "lines+markers", line: {shape: "hv", width: 3},
        text: c.best_id.map(function (i) { return pt(i || ""); }), hovertemplate: "%{y}<br>%{text}<extra>best so far</extra>"}];
      if (p[1] === "evaluations") {
        traces.push({x: d.generations.map(function (g) { return g.x1 - 0.5; }), y: d.generations.map(function (g) { return g.median; }),
          name: "generation median", mode: "markers", marker: {symbol: "diamond-open", size: 9}});
      }
      d.baselines.forEach(function (b, i) {
        traces.push({x: [0, xmax], y: [b.objective, b.objective], name: pt("baseline " + b.name), mode: "lines",
          line: {dash: DASH[(i + 1) % DASH.length], width: 1.5, color: "#777"}});
      });
      if (d.best && d.best.test && d.best.test.objective !== null) {
        traces.push({x: [xmax], y: [d.best.test.objective], name: pt("best on test set (" + d.best.test.set + ")"),
          mode: "markers", marker: {symbol: "star", size: 14, color: "#d62728"}});
      }
      var shapes = p[1] === "evaluations" ? d.generations.map(function (g) {
        return {type: "rect", xref: "x", yref: "paper", x0: g.x0, x1: g.x1, y0: 0, y1: 1, line: {width: 0},
          fillcolor: REGIME[g.regime] || "#eeeeee", opacity: 0.6, layer: "below"};
      }) : [];
      var notes = p[1] === "evaluations" ? d.generations.map(function (g) {
        return {x: (g.x0 + g.x1) / 2, y: 1, xref: "x", yref: "paper", yanchor: "bottom", showarrow: false,
          text: pt("g" + g.generation + " " + g.regime), font: {size: 10}};
      }) : [];
      if (!ys.length) notes.push({x: 0.5, y: 0.5, xref: "paper", yref: "paper", showarrow: false, font: {size: 14, color: "#888"},
        text: "no feasible candidate yet"});
      plot(p[0], traces, {title: {text: pt(d.metric + (d.direction ? " (" + d.direction + ")" : "") + ": best so far against " + p[1])},
        xaxis: {title: {text: p[1]}}, yaxis: {title: {text: pt(d.metric)}, range: range}, shapes: shapes, annotations: notes});
    });
  }

  var COLS = [["order", "#"], ["id", "candidate"], ["generation", "gen"], ["operator", "operator"], ["parents", "parent(s)"],
    ["objective", "score"], ["per_instance", "score per instance"], ["principles", "principles in its prompt"],
    ["reason", "error / failure"], ["code", "code"]];
  function sortKey(c, k) {
    var v = c[k];
    if (k === "parents" || k === "principles") return v.join(",");
    if (k === "per_instance") return v.length ? v[0] : null;
    if (k === "code") return v.length;
    return v;
  }
  function candTable(d) {
    var head = clear($("cands-head")), body = clear($("cands-body")), s = state.sort;
    var tr = el("tr");
    COLS.forEach(function (col) {
      var th = el("th", col[1] + (s.key === col[0] ? (s.dir > 0 ? " \u25b2" : " \u25bc") : ""), "sort");
      th.dataset.key = col[0];
      th.onclick = function () { state.sort = {key: col[0], dir: s.key === col[0] ? -s.dir : 1}; candTable(state.data); };
      tr.appendChild(th);
    });
    head.appendChild(tr);
    var rows = d.candidates.map(function (c, i) { return Object.assign({order: i + 1}, c); });
    rows.sort(function (a, b) {
      var x = sortKey(a, s.key), y = sortKey(b, s.key);
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : x > y ? 1 : 0) * s.dir;
    });
    rows.forEach(function (c) {
      var r = el("tr");
      r.dataset.id = c.id;
      if (c.id === state.sel) r.className = "sel";
      r.appendChild(el("td", c.order)); r.appendChild(el("td", c.id)); r.appendChild(el("td", c.generation));
      r.appendChild(el("td", c.operator)); r.appendChild(el("td", c.parents.join(", ")));
      r.appendChild(el("td", fmt(c.objective)));
      r.appendChild(el("td", c.per_instance.map(fmt).join(", ")));
      var pc = el("td");
      c.principles.forEach(function (pid) {
        var t = principleText(d, pid), div = el("div", "#" + pid + (t ? ": " + short(t, 60) : ""));
        div.title = t; pc.appendChild(div);
      });
      r.appendChild(pc);
      var ec = el("td", c.reason, c.reason && c.status !== "pending" ? "err" : ""); ec.title = c.error; r.appendChild(ec);
      var cc = el("td"), det = el("details"), sum = el("summary", c.code.split("\n").length + " lines");
      det.appendChild(sum); det.appendChild(el("pre", c.code)); cc.appendChild(det);
      cc.onclick = function (ev) { ev.stopPropagation(); };
      r.appendChild(cc);
      r.onclick = function () { select(c.id); };
      body.appendChild(r);
    });
  }

  function byId(d, id) { for (var i = 0; i < d.candidates.length; i++) if (d.candidates[i].id === id) return d.candidates[i]; return null; }
  function select(id) {
    state.sel = id;
    var rows = $("cands-body").children;
    for (var i = 0; i < rows.length; i++) rows[i].className = rows[i].dataset.id === id ? "sel" : "";
    detail(state.data);
  }
  function detail(d) {
    var box = clear($("detail")), c = state.sel && byId(d, state.sel);
    if (!c) { box.appendChild(el("p", "Click a row of the table or a point of the genealogy to see a candidate.", "muted")); return; }
    var t = el("table", null, "facts");
    [["candidate", c.id], ["generation", c.generation], ["operator", c.operator], ["regime", c.regime], ["parent(s)", c.parents.join(", ")],
     ["status", c.status], ["score (" + d.metric + ")", fmt(c.objective)], ["fitness", fmt(c.fitness)], ["sandbox seconds", fmt(c.wall_s)]]
      .forEach(function (r) { t.appendChild(row([el("th", r[0]), el("td", r[1])])); });
    box.appendChild(t);
    if (c.thought) { box.appendChild(el("h3", "its idea")); box.appendChild(el("pre", c.thought)); }
    if (c.error) { box.appendChild(el("h3", "error")); box.appendChild(el("pre", c.error, "err")); }
    box.appendChild(el("h3", "code")); box.appendChild(el("pre", c.code));
    if (c.per_instance_metrics.length) {
      box.appendChild(el("h3", "score per instance"));
      var keys = Object.keys(c.per_instance_metrics[0] || {}), pi = el("table");
      pi.appendChild(row([el("th", "instance")].concat(keys.map(function (k) { return el("th", k); }))));
      c.per_instance_metrics.forEach(function (m, i) {
        pi.appendChild(row([el("td", i)].concat(keys.map(function (k) { return el("td", fmt(m[k])); }))));
      });
      box.appendChild(pi);
    }
    if (c.parents.length) {
      var btn = el("button", "diff with its parent " + c.parents[0]);
      btn.onclick = function () { $("diff-a").value = c.parents[0]; $("diff-b").value = c.id; diff(state.data); };
      box.appendChild(btn);
    }
    var pbox = el("div"); box.appendChild(el("h3", "prompt and reply")); box.appendChild(pbox);
    if (!c.prompt_id) { pbox.appendChild(el("p", "no model prompt (a baseline or a hand-made candidate)", "muted")); return; }
    withPrompt(d, c.prompt_id, function (p, err) {
      if (state.sel !== c.id) return;
      if (!p) { pbox.appendChild(el("p", err || "prompt not found", "err")); return; }
      p.principles.forEach(function (pid) { pbox.appendChild(el("div", "principle #" + pid + ": " + principleText(d, pid))); });
      p.messages.forEach(function (m) {
        var div = el("div", null, "msg"); div.appendChild(el("b", m.role)); div.appendChild(el("pre", m.content)); pbox.appendChild(div);
      });
      var rep = el("div", null, "msg"); rep.appendChild(el("b", "reply")); rep.appendChild(el("pre", p.reply)); pbox.appendChild(rep);
    });
  }
  function withPrompt(d, pid, done) {
    if (d.prompts) return done(d.prompts[pid] || null);
    if (state.prompts[pid]) return done(state.prompts[pid]);
    fetch(MODE.api + "prompt/" + encodeURIComponent(pid)).then(function (r) {
      if (!r.ok) return r.text().then(function (t) { done(null, t); });
      return r.json().then(function (p) { state.prompts[pid] = p; done(p); });
    }).catch(function (e) { done(null, "could not fetch the prompt: " + e); });
  }

  function lcs(a, b) {  // line diff by longest common subsequence: [op, line] with op in " ", "-", "+"
    var n = a.length, m = b.length, L = [], i, j;
    for (i = 0; i <= n; i++) { L.push(new Int32Array(m + 1)); }
    for (i = n - 1; i >= 0; i--) for (j = m - 1; j >= 0; j--) L[i][j] = a[i] === b[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
    var out = []; i = 0; j = 0;
    while (i < n && j < m) {
      if (a[i] === b[j]) { out.push([" ", a[i]]); i++; j++; } else if (L[i + 1][j] >= L[i][j + 1]) { out.push(["-", a[i]]); i++; } else { out.push(["+", b[j]]); j++; }
    }
    for (; i < n; i++) out.push(["-", a[i]]);
    for (; j < m; j++) out.push(["+", b[j]]);
    return out;
  }
  function diffSelectors(d) {
    ["diff-a", "diff-b"].forEach(function (id, k) {
      var s = $(id), keep = s.value;
      clear(s);
      d.candidates.forEach(function (c) { s.appendChild(el("option", c.id + " (g" + c.generation + " " + c.operator + " " + fmt(c.objective) + ")")).value = c.id; });
      if (keep && byId(d, keep)) s.value = keep;
      else if (d.best) s.value = k === 1 ? d.best.id : (byId(d, d.best.id).parents[0] || d.candidates[0].id);
      s.onchange = function () { diff(state.data); };
    });
  }
  function diff(d) {
    var a = byId(d, $("diff-a").value), b = byId(d, $("diff-b").value), pre = clear($("diff"));
    if (!a || !b) return;
    lcs(a.code.split("\n"), b.code.split("\n")).forEach(function (x) {
      pre.appendChild(el("span", x[0] + " " + x[1] + "\n", x[0] === "+" ? "add" : x[0] === "-" ? "del" : ""));
    });
  }

  function genealogy(d) {
    var pos = {}, byGen = {};
    d.candidates.forEach(function (c) { (byGen[c.generation] = byGen[c.generation] || []).push(c); });
    Object.keys(byGen).forEach(function (g) {
      byGen[g].sort(function (a, b) { return (b.fitness === null ? -1e300 : b.fitness) - (a.fitness === null ? -1e300 : a.fitness); });
      byGen[g].forEach(function (c, i) { pos[c.id] = [Number(g), i]; });
    });
    var lineage = {}, cur = d.best && byId(d, d.best.id);
    while (cur && !lineage[cur.id]) { lineage[cur.id] = 1; cur = cur.parents.length ? byId(d, cur.parents[0]) : null; }
    var ex = [], ey = [], bx = [], by = [];
    d.candidates.forEach(function (c) {
      c.parents.forEach(function (p, k) {
        if (!pos[p]) return;
        var onBest = k === 0 && lineage[c.id] && lineage[p];
        (onBest ? bx : ex).push(pos[p][0], pos[c.id][0], null); (onBest ? by : ey).push(pos[p][1], pos[c.id][1], null);
      });
    });
    var groups = [["feasible", function (c) { return c.ok && c.operator !== "baseline"; }, "circle", "#2ca02c"],
      ["baseline", function (c) { return c.operator === "baseline"; }, "square", "#555"],
      ["failed / not scored", function (c) { return !c.ok && c.operator !== "baseline"; }, "x", "#d62728"]];
    var traces = [{x: ex, y: ey, mode: "lines", line: {color: "#bbb", width: 1}, hoverinfo: "skip", name: "parent \u2192 child"},
      {x: bx, y: by, mode: "lines", line: {color: "#1f77b4", width: 3}, hoverinfo: "skip", name: "lineage of the best"}];
    groups.forEach(function (g) {
      var cs = d.candidates.filter(g[1]);
      traces.push({x: cs.map(function (c) { return pos[c.id][0]; }), y: cs.map(function (c) { return pos[c.id][1]; }),
        customdata: cs.map(function (c) { return c.id; }), mode: "markers", name: g[0], marker: {symbol: g[2], color: g[3], size: 10},
        text: cs.map(function (c) { return pt(c.id + " " + c.operator + " " + (c.ok ? fmt(c.objective) : c.reason)); }), hoverinfo: "text"});
    });
    var most = Math.max.apply(null, Object.keys(byGen).map(function (g) { return byGen[g].length; }).concat([1]));
    plot("plot-genealogy", traces, {height: Math.max(340, 22 * most + 140), title: {text: "genealogy (click a point to see the candidate)"}, xaxis: {title: {text: "generation"}, dtick: 1},
      yaxis: {title: {text: "rank in its generation (0 = fittest)"}, autorange: "reversed"}});
    var div = $("plot-genealogy");
    if (!div.dataset.bound) {
      div.dataset.bound = "1";
      div.on("plotly_click", function (ev) { var id = ev.points[0].customdata; if (id) select(id); });
    }
  }

  function foresightTable(d) {
    var t = clear($("foresight"));
    t.appendChild(row(["generation", "regime", "directive", "reason", "numbers"].map(function (h) { return el("th", h); })));
    d.foresight.forEach(function (f) {
      t.appendChild(row([el("td", f.generation), el("td", f.regime), el("td", f.directive), el("td", f.reason),
        el("td", Object.keys(f.numbers || {}).map(function (k) { return k + "=" + fmt(f.numbers[k]); }).join(", "))]));
    });
    if (!d.foresight.length) t.appendChild(row([el("td", "no foresight decision yet")]));
  }
  function principles(d) {
    var traces = d.principles.filter(function (p) { return p.utility.length; }).slice(0, 10).map(function (p, i) {
      return {x: p.utility.map(function (u) { return u[0]; }), y: p.utility.map(function (u) { return u[1]; }),
        name: pt(short("#" + p.id + ": " + p.text, 70)), mode: "lines+markers", line: {dash: DASH[i % DASH.length]},
        marker: {symbol: SYMBOL[i % SYMBOL.length]}, text: p.utility.map(function () { return wrap(p.text, 80); }),
        hovertemplate: "utility %{y} in generation %{x}<br>%{text}<extra></extra>"};
    });
    plot("plot-principles", traces, {title: {text: "credit (utility) of each recalled principle"}, height: 420,
      xaxis: {title: {text: "generation"}, dtick: 1}, yaxis: {title: {text: "utility"}}, legend: {orientation: "h", y: -0.25}});
    var t = clear($("principles"));
    t.appendChild(row(["principle", "text", "prompts using it", "utility at each recall (generation: utility)"].map(function (h) { return el("th", h); })));
    d.principles.forEach(function (p) {
      t.appendChild(row([el("td", "#" + p.id), el("td", p.text), el("td", p.uses),
        el("td", p.utility.map(function (u) { return u[0] + ": " + fmt(u[1]); }).join(", "))]));
    });
  }
  function others(d) {
    var counts = {};
    d.candidates.forEach(function (c) { if (c.operator !== "baseline") { var k = c.ok ? "feasible" : c.reason; counts[k] = (counts[k] || 0) + 1; } });
    var keys = Object.keys(counts).sort(function (a, b) { return counts[b] - counts[a]; });
    plot("plot-outcomes", [{type: "bar", orientation: "h", y: keys.map(pt), x: keys.map(function (k) { return counts[k]; })}],
      {title: {text: "outcomes of the offspring"}, margin: {l: 260, r: 20, t: 36, b: 40}, yaxis: {automargin: true}});
    plot("plot-spend", [{type: "bar", x: d.spend.map(function (s) { return s.generation; }), y: d.spend.map(function (s) { return s.tokens; }),
      text: d.spend.map(function (s) { return "$" + s.cost_usd; }), name: "tokens"}],
      {title: {text: "model tokens per generation (cost as text)"}, xaxis: {title: {text: "generation"}, dtick: 1}});
    var ev = d.candidates.filter(function (c) { return c.status === "evaluated"; });
    plot("plot-sandbox", [{x: ev.map(function (c, i) { return i + 1; }), y: ev.map(function (c) { return c.wall_s; }), mode: "markers",
      text: ev.map(function (c) { return pt(c.id); }), name: "seconds"}],
      {title: {text: "sandbox time per candidate"}, xaxis: {title: {text: "evaluation"}}, yaxis: {title: {text: "seconds"}}});
  }

  function render(d) {
    state.data = d;
    document.title = "hifo run " + d.run;
    $("title").textContent = "hifo run " + d.run;
    if (state.sel === null && d.best) state.sel = d.best.id;
    facts(d); bestPlots(d); candTable(d); detail(d); diffSelectors(d); diff(d); genealogy(d); foresightTable(d); principles(d); others(d);
  }

  function renderCompare(runs) {
    var traces = runs.map(function (r, i) {
      // identical curves stay visible: each run gets its own dash, marker and a narrower line than the one before
      return {x: r.curve.evaluations, y: r.curve.best, name: pt(r.run), mode: "lines+markers",
        line: {shape: "hv", dash: DASH[i % DASH.length], width: Math.max(1, 6 - 1.5 * i)},
        marker: {symbol: SYMBOL[i % SYMBOL.length], size: Math.max(5, 11 - 2 * i)}};
    });
    plot("plot-compare", traces, {title: {text: "best so far against evaluations"}, xaxis: {title: {text: "evaluations"}},
      yaxis: {title: {text: pt(runs.map(function (r) { return r.metric; }).filter(function (m, i, a) { return a.indexOf(m) === i; }).join(", "))}}});
  }

  function poll() {
    fetch(MODE.api + "version", {cache: "no-store"}).then(function (r) {
      return r.text().then(function (t) { if (!r.ok) throw new Error(t); return t; });
    }).then(function (stamp) {
      if (stamp === state.stamp) return null;
      return fetch(MODE.api + "data", {cache: "no-store"}).then(function (r) {
        return r.text().then(function (t) { if (!r.ok) throw new Error(t); state.stamp = stamp; render(JSON.parse(t)); });
      });
    }).then(function () {
      var live = $("live"); live.className = ""; live.textContent = "live: read " + new Date().toLocaleTimeString() +
        (state.data ? " \u00b7 " + state.data.status + " \u00b7 " + state.data.evaluations + " evaluations" : "");
    }).catch(function (e) { var live = $("live"); live.className = "bad"; live.textContent = "cannot read the run: " + e.message; })
      .then(function () { setTimeout(poll, MODE.interval_ms || 1500); });
  }

  if (MODE.compare) renderCompare(JSON.parse($("hifo-data").textContent));
  else if (MODE.live) poll();
  else render(JSON.parse($("hifo-data").textContent));
})();
