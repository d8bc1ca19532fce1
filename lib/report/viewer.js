// viewer.js - the HTML report's timeline that zooms and pans, and its
// flame graph.  Inlined into the page by is-report (report_html.c) with
// the data it reads (report_detail.c): no network, no library.  Names are
// shown with textContent and drawn on a canvas, never parsed as HTML.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("is-data").textContent);
  var CAT = ["scope", "NVTX range", "Python call", "CUDA call", "sync",
    "kernel", "copy H2D", "copy D2H", "copy D2D", "memset"];
  var COL = ["#6a4c93", "#8a6fb3", "#4c8bd6", "#f0a030", "#d64c4c",
    "#2e9e5b", "#c0607f", "#8f5bb8", "#a07040", "#7a7a7a"];
  var GC = "#e0201b", LABEL = 190, ROW = 14, MAXROWS = 16, DENS = 5;
  var root = document.getElementById("is-viewer");
  var tip = document.getElementById("is-tip");

  function dur(ns) {
    var a = Math.abs(ns);
    if (a < 1e3) return ns.toFixed(0) + " ns";
    if (a < 1e6) return (ns / 1e3).toFixed(a < 1e4 ? 2 : 1) + " \u00b5s";
    if (a < 1e9) return (ns / 1e6).toFixed(a < 1e7 ? 3 : 2) + " ms";
    return (ns / 1e9).toFixed(3) + " s";
  }
  function setup(canvas, h) {
    var r = window.devicePixelRatio || 1, w = canvas.parentNode.clientWidth;
    canvas.style.width = w + "px";
    canvas.style.height = h + "px";
    canvas.width = Math.round(w * r);
    canvas.height = Math.round(h * r);
    var g = canvas.getContext("2d");
    g.setTransform(r, 0, 0, r, 0, 0);
    return { g: g, w: w, h: h };
  }
  function showTip(e, lines) {
    if (!lines) { tip.style.display = "none"; return; }
    tip.textContent = lines.join("\n");
    tip.style.display = "block";
    var x = e.pageX + 14, y = e.pageY + 14;
    if (x + tip.offsetWidth > document.documentElement.scrollWidth)
      x = e.pageX - tip.offsetWidth - 14;
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  }

  // ---- the timeline ----
  var lanes = D.lanes.map(function (l) {
    return { name: l.name, gpu: l.gpu, bins: l.bins, sl: [], rows: 1 };
  });
  var S = D.slices, byCorr = {};
  for (var i = 0; i < S.length; i += 7) {
    var x = { lane: S[i], cat: S[i + 1], s: S[i + 2], d: S[i + 3],
      name: D.names[S[i + 4]], corr: S[i + 5], gc: S[i + 6] };
    lanes[x.lane].sl.push(x);
    if (x.corr >= 0) (byCorr[x.corr] = byCorr[x.corr] || []).push(x);
  }
  // nesting depth per lane: a stack of ends, by start then longest first
  lanes.forEach(function (l) {
    l.sl.sort(function (a, b) { return a.s - b.s || b.d - a.d; });
    var ends = [];
    l.sl.forEach(function (x) {
      while (ends.length && ends[ends.length - 1] <= x.s) ends.pop();
      x.depth = ends.length;
      ends.push(x.s + x.d);
      if (x.depth + 1 > l.rows) l.rows = Math.min(x.depth + 1, MAXROWS);
    });
  });
  var imports = [];
  for (i = 0; i < D.imports.length; i += 3)
    imports.push({ lane: D.imports[i], s: D.imports[i + 1],
      d: D.imports[i + 2] });
  var tl = document.getElementById("is-timeline");
  var view = [0, D.end], hover = null, ctx, layout = [];
  var top0 = 22, H;
  (function () {
    var y = top0;
    lanes.forEach(function (l) {
      l.y = y;
      l.h = DENS + 2 + l.rows * ROW;
      y += l.h + 8;
    });
    H = y + 8;
    // where each lane is drawn: its first row of ranges (for tests, and
    // for whoever scripts the page)
    tl.dataset.lanes = JSON.stringify(lanes.map(function (l) {
      return [l.name, l.y + DENS + 2, l.rows * ROW];
    }));
  })();

  function xOf(t) { return LABEL + (t - view[0]) * (ctx.w - LABEL - 10) / (view[1] - view[0]); }
  function tOf(x) { return view[0] + (x - LABEL) * (view[1] - view[0]) / (ctx.w - LABEL - 10); }
  function niceStep(span) {
    var raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = raw / p;
    return (m < 2 ? 2 : m < 5 ? 5 : 10) * p;
  }
  // the canvases are sized when the page is laid out and when it
  // changes, not at every redraw
  function drawTimeline() {
    var g = ctx.g, W = ctx.w;
    g.clearRect(0, 0, W, H);
    g.font = "11px system-ui, sans-serif";
    // the axis: ticks at a round step of the visible span
    var step = niceStep(view[1] - view[0]);
    g.fillStyle = "#5a6270";
    g.strokeStyle = "#e3e6eb";
    for (var t = Math.ceil(view[0] / step) * step; t <= view[1]; t += step) {
      var x = xOf(t);
      g.beginPath(); g.moveTo(x, 16); g.lineTo(x, H); g.stroke();
      g.fillText(dur(t), x + 2, 12);
    }
    lanes.forEach(function (l, li) {
      g.save();
      g.beginPath(); g.rect(LABEL, l.y - 2, W - LABEL, l.h + 4); g.clip();
      imports.forEach(function (p) {
        if (p.lane !== li) return;
        var a = xOf(p.s), b = xOf(p.s + p.d);
        if (b < LABEL || a > W) return;
        g.fillStyle = "rgba(240,160,48,0.13)";
        g.fillRect(a, l.y, Math.max(b - a, 1), l.h);
      });
      // the binned coverage: how busy each column was, ranges too short
      // to keep included, as a thin strip on top of the lane
      var bw = D.w, k0 = Math.max(0, Math.floor(view[0] / bw)),
        k1 = Math.min(D.cols - 1, Math.ceil(view[1] / bw));
      for (var k = k0; k <= k1; k++) {
        var best = -1, bv = 0, tot = 0;
        for (var c = 0; c < CAT.length; c++) {
          var v = l.bins[c][k] || 0;
          tot += v;
          if (v > bv) { bv = v; best = c; }
        }
        if (best < 0) continue;
        g.globalAlpha = Math.min(1, 0.25 + tot / bw);
        g.fillStyle = COL[best];
        var xa = xOf(k * bw), xb = xOf((k + 1) * bw);
        g.fillRect(xa, l.y, Math.max(xb - xa, 1), DENS);
      }
      g.globalAlpha = 1;
      var px = (view[1] - view[0]) / (W - LABEL - 10);
      l.sl.forEach(function (x) {
        if (x.s > view[1] || x.s + x.d < view[0] || x.depth >= MAXROWS)
          return;
        var a = xOf(x.s), b = xOf(x.s + x.d), y = l.y + DENS + 2 +
          x.depth * ROW;
        g.fillStyle = x.gc ? GC : COL[x.cat];
        g.fillRect(a, y, Math.max(b - a, x.d > px ? 1 : 0.6), ROW - 2);
        if (b - a > 40) {
          g.fillStyle = "#fff";
          g.fillText(x.name.slice(0, Math.floor((b - a - 6) / 6)),
            Math.max(a, LABEL) + 3, y + ROW - 4);
        }
        if (x.gc) {      // a mark that stays visible however short
          g.beginPath(); g.moveTo(a - 4, l.y); g.lineTo(a + 4, l.y);
          g.lineTo(a, l.y + 6); g.fill();
        }
      });
      g.restore();
      g.fillStyle = "#1d2330";
      g.textAlign = "right";
      g.fillText(l.name.length > 30 ? l.name.slice(0, 29) + "\u2026" :
        l.name, LABEL - 6, l.y + 12);
      g.textAlign = "left";
    });
    if (hover && hover.link) {      // launch to kernel
      var p = hover.link, q = hover.x;
      var ya = lanes[q.lane].y + DENS + 2 + q.depth * ROW + ROW / 2,
        yb = lanes[p.lane].y + DENS + 2 + p.depth * ROW + ROW / 2;
      g.strokeStyle = "#1d2330"; g.lineWidth = 1.5;
      g.beginPath(); g.moveTo(xOf(q.s), ya); g.lineTo(xOf(p.s), yb);
      g.stroke(); g.lineWidth = 1;
    }
    tl.dataset.view = Math.round(view[0]) + "," + Math.round(view[1]);
    document.getElementById("is-range").textContent = "showing " +
      dur(view[0]) + " to " + dur(view[1]) + " (" + dur(view[1] - view[0]) +
      ")" + (D.min_dur ? "; ranges under " + dur(D.min_dur) +
      " are in the strips only" : "");
  }
  function at(mx, my) {
    var t = tOf(mx);
    for (var li = 0; li < lanes.length; li++) {
      var l = lanes[li];
      if (my < l.y || my > l.y + l.h) continue;
      var depth = Math.floor((my - l.y - DENS - 2) / ROW), best = null;
      var slop = (view[1] - view[0]) / (ctx.w - LABEL) * 2;
      l.sl.forEach(function (x) {
        if (x.depth === depth && x.s - slop <= t && x.s + x.d + slop >= t &&
          (!best || x.d < best.d)) best = x;
      });
      if (best) return { x: best, lane: l };
      var ph = null;
      imports.forEach(function (p) {
        if (p.lane === li && p.s <= t && p.s + p.d >= t) ph = p;
      });
      return ph ? { phase: ph, lane: l } : null;
    }
    return null;
  }
  function describe(h) {
    if (h.phase) return ["import phase", "on " + h.lane.name,
      dur(h.phase.d) + " from " + dur(h.phase.s)];
    var x = h.x, out = [x.name || CAT[x.cat], (x.gc ? "garbage collection" :
      CAT[x.cat]) + " on " + h.lane.name, dur(x.d) + ", from " + dur(x.s)];
    if (h.link) {
      var p = h.link, gpu = lanes[p.lane].gpu;
      out.push((gpu ? "launched " : "launched by ") + (p.name || CAT[p.cat]) +
        " on " + lanes[p.lane].name + ", " + dur(Math.abs(p.s - x.s)) +
        (gpu ? " later" : " before"));
    }
    return out;
  }
  tl.addEventListener("mousemove", function (e) {
    var r = tl.getBoundingClientRect(), mx = e.clientX - r.left,
      my = e.clientY - r.top;
    if (drag) {
      var dt = (drag.x - mx) * (view[1] - view[0]) / (ctx.w - LABEL - 10);
      view = [drag.v[0] + dt, drag.v[1] + dt];
      drawTimeline();
      return;
    }
    var h = at(mx, my);
    if (h && h.x && h.x.corr >= 0)
      (byCorr[h.x.corr] || []).forEach(function (p) {
        if (lanes[p.lane].gpu !== lanes[h.x.lane].gpu) h.link = p;
      });
    hover = h;
    showTip(e, h ? describe(h) : null);
    drawTimeline();
  });
  tl.addEventListener("mouseleave", function () {
    hover = null; showTip(null, null); drawTimeline();
  });
  function zoom(f, mx) {
    var t = tOf(mx), span = (view[1] - view[0]) * f;
    span = Math.max(span, 1000);
    var a = t - (t - view[0]) * span / (view[1] - view[0]);
    view = [a, a + span];
    drawTimeline();
  }
  tl.addEventListener("wheel", function (e) {
    e.preventDefault();
    var r = tl.getBoundingClientRect();
    zoom(Math.pow(1.0015, e.deltaY), Math.max(e.clientX - r.left, LABEL));
  }, { passive: false });
  var drag = null;
  tl.addEventListener("mousedown", function (e) {
    var r = tl.getBoundingClientRect();
    drag = { x: e.clientX - r.left, v: view.slice() };
  });
  window.addEventListener("mouseup", function () { drag = null; });
  tl.addEventListener("dblclick", function (e) {
    var r = tl.getBoundingClientRect(), h = at(e.clientX - r.left,
      e.clientY - r.top);
    if (h && h.x) { view = [h.x.s - h.x.d * 0.05, h.x.s + h.x.d * 1.05]; drawTimeline(); }
  });
  document.getElementById("is-reset").addEventListener("click", function () {
    view = [0, D.end]; drawTimeline();
  });
  document.getElementById("is-in").addEventListener("click", function () {
    zoom(0.5, (ctx.w + LABEL) / 2);
  });
  document.getElementById("is-out").addEventListener("click", function () {
    zoom(2, (ctx.w + LABEL) / 2);
  });

  // ---- the flame graph: Python calls merged by call path ----
  var fl = document.getElementById("is-flame"), sel =
    document.getElementById("is-thread"), fctx, froot, fzoom, fhover;
  var flames = [];
  D.lanes.forEach(function (l) { if (l.flame) flames.push(l); });
  function build(n, parent, depth) {
    var o = { name: D.names[n[0]] || "all calls", incl: n[1], self: n[2],
      kids: [], parent: parent, depth: depth };
    o.kids = n[3].map(function (k) { return build(k, o, depth + 1); });
    return o;
  }
  function maxDepth(n) {
    return n.kids.reduce(function (m, k) { return Math.max(m, maxDepth(k)); },
      n.depth);
  }
  function drawFlame() {
    var FH = 18, g = fctx.g, W = fctx.w, boxes = [];
    g.clearRect(0, 0, W, fctx.h);
    g.font = "11px system-ui, sans-serif";
    // the zoomed node spans the width; its ancestors too, greyed
    function place(n, x, w) {
      boxes.push({ n: n, x: x, w: w });
      var cx = x;
      n.kids.forEach(function (k) {
        var kw = n.incl ? w * k.incl / n.incl : 0;
        if (kw >= 0.5) place(k, cx, kw);
        cx += kw;
      });
    }
    for (var a = fzoom.parent; a; a = a.parent)
      boxes.push({ n: a, x: 0, w: W, up: true });
    place(fzoom, 0, W);
    fl.boxes = boxes;
    boxes.forEach(function (b) {
      var y = b.n.depth * FH;
      var hue = 200 + (b.n.name.length * 37) % 60;
      g.fillStyle = b.up ? "#c8ccd3" : b.n === froot ? "#5a6270" :
        "hsl(" + hue + ",55%," + (b === fhover ? 45 : 58) + "%)";
      g.fillRect(b.x, y, Math.max(b.w - 1, 0.5), FH - 1);
      if (b.w > 30) {
        g.fillStyle = "#fff";
        g.fillText(b.n.name.slice(0, Math.floor((b.w - 6) / 6)), b.x + 3,
          y + 13);
      }
    });
    fl.dataset.zoom = fzoom.name;
  }
  function boxAt(e) {
    var r = fl.getBoundingClientRect(), mx = e.clientX - r.left,
      my = e.clientY - r.top, hit = null;
    (fl.boxes || []).forEach(function (b) {
      if (mx >= b.x && mx < b.x + b.w && my >= b.n.depth * 18 &&
        my < b.n.depth * 18 + 18) hit = b;
    });
    return hit;
  }
  fl.addEventListener("mousemove", function (e) {
    var b = boxAt(e);
    fhover = b;
    showTip(e, b ? [b.n.name, "inclusive " + dur(b.n.incl) + " (" +
      (100 * b.n.incl / Math.max(froot.incl, 1)).toFixed(1) +
      "% of the thread's calls)", "self " + dur(b.n.self)] : null);
    drawFlame();
  });
  fl.addEventListener("mouseleave", function () { fhover = null; showTip(null, null); drawFlame(); });
  fl.addEventListener("click", function (e) {
    var b = boxAt(e);
    if (b) { fzoom = b.n; drawFlame(); }
  });
  function sizeFlame() { fctx = setup(fl, (maxDepth(froot) + 1) * 18 + 4); }
  function pick() {
    froot = build(flames[sel.selectedIndex].flame, null, 0);
    fzoom = froot;
    sizeFlame();
    drawFlame();
  }
  flames.forEach(function (l) {
    var o = document.createElement("option");
    o.textContent = l.name;
    sel.appendChild(o);
  });
  sel.addEventListener("change", pick);

  root.style.display = "block";
  var still = document.getElementById("is-static");
  if (still) still.style.display = "none";
  ctx = setup(tl, H);
  drawTimeline();
  if (flames.length) pick();
  else document.getElementById("is-flamefig").style.display = "none";
  window.addEventListener("resize", function () {
    ctx = setup(tl, H);
    drawTimeline();
    if (flames.length) { sizeFlame(); drawFlame(); }
  });
})();
