"""The replay viewer's page: HTML, CSS and JavaScript in one template (``__TITLE__`` and ``__DATA__`` are
filled in by ``arena.replay.html``). Kept as a Python string so that it ships inside the package."""

PAGE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<style>
  body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 16px; color: #222;
         background: #fafafa; }
  h1 { font-size: 17px; margin: 0 0 4px 0; }
  #result { margin: 0 0 10px 0; color: #444; }
  .wrap { display: flex; gap: 16px; align-items: flex-start; flex-wrap: wrap; }
  canvas { background: #fff; border: 1px solid #ddd; display: block; }
  #panel { width: 270px; }
  #panel table { border-collapse: collapse; margin: 6px 0 12px 0; }
  #panel td, #panel th { padding: 2px 8px 2px 0; text-align: left; font-variant-numeric: tabular-nums; }
  .swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 6px;
            vertical-align: -1px; }
  #controls { display: flex; gap: 10px; align-items: center; margin: 10px 0; width: 722px; }
  #scrub { flex: 1; }
  #play { width: 70px; }
  #clock { font-variant-numeric: tabular-nums; min-width: 120px; text-align: right; }
  .help { color: #777; font-size: 12px; }
</style>
</head>
<body>
<h1 id="title"></h1>
<div id="result"></div>
<div class="wrap">
  <div>
    <canvas id="canvas" width="720" height="720"></canvas>
    <div id="controls">
      <button id="play" type="button">Play</button>
      <input id="scrub" type="range" min="0" max="0" step="1" value="0" aria-label="decision shown">
      <label>speed <select id="speed">
        <option value="1">1&times;</option><option value="2">2&times;</option>
        <option value="4">4&times;</option><option value="8" selected>8&times;</option>
        <option value="16">16&times;</option><option value="32">32&times;</option>
      </select></label>
      <label><input id="labels" type="checkbox"> missile labels</label>
      <span id="clock"></span>
    </div>
    <canvas id="range" width="720" height="170"></canvas>
  </div>
  <aside id="panel">
    <div id="sides"></div>
    <table id="fighters"><thead><tr><th>fighter</th><th>status</th><th>missiles</th><th>speed</th></tr>
    </thead><tbody></tbody></table>
    <div id="info" class="help"></div>
    <p class="help">space: play / pause<br>&larr; &rarr;: one decision (shift: ten)<br>
      Home / End: start / end<br>click the range chart to jump there<br>
      rings: launches, crosses: kills</p>
  </aside>
</div>
<script id="replay-data" type="application/json">__DATA__</script>
<script>
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("replay-data").textContent);
  const T = D.frames;
  const $ = (id) => document.getElementById(id);
  const canvas = $("canvas"), ctx = canvas.getContext("2d");
  const chart = $("range"), cctx = chart.getContext("2d");
  const playBtn = $("play"), scrub = $("scrub"), speedSel = $("speed"), clock = $("clock");
  const TRAIL = 50, MISSILE_TRAIL = 12;
  const labelsBox = $("labels");
  labelsBox.checked = Math.max(...D.game.team_sizes) > 1;  // on in team games: shooter and target
  let frame = 0, playing = false, lastTs = null, carry = 0;

  // World (km) to canvas pixels: the bounds fill the square canvas, north up.
  const W = canvas.width, H = canvas.height, PAD = 24;
  const [x0, x1, y0, y1] = D.bounds;
  const span = Math.max(x1 - x0, y1 - y0);
  const scale = (Math.min(W, H) - 2 * PAD) / span;
  const cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
  const px = (x) => W / 2 + (x - cx) * scale;
  const py = (y) => H / 2 - (y - cy) * scale;

  function rgba(hex, a) {
    const n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + a + ")";
  }
  function niceStep(raw) {
    const e = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1e-9))));
    for (const m of [1, 2, 5, 10]) if (raw <= m * e) return m * e;
    return 10 * e;
  }
  function lastAlive(f, t) {
    let k = t;
    while (k >= 0 && !f.alive[k]) k--;
    return k;
  }

  function drawBackground() {
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, W, H);
    const step = niceStep(span / 6);
    ctx.strokeStyle = "#ececec";
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let v = Math.floor(x0 / step) * step; v <= x1 + step; v += step) {
      ctx.moveTo(px(v), 0); ctx.lineTo(px(v), H);
    }
    for (let v = Math.floor(y0 / step) * step; v <= y1 + step; v += step) {
      ctx.moveTo(0, py(v)); ctx.lineTo(W, py(v));
    }
    ctx.stroke();
    ctx.setLineDash([6, 6]);
    ctx.strokeStyle = "#aaa";
    ctx.beginPath();
    ctx.arc(px(0), py(0), D.arena_radius_km * scale, 0, 2 * Math.PI);
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = "#999";
    ctx.font = "12px sans-serif";
    ctx.fillText("grid " + step + " km", W - 86, H - 8);
  }

  function drawTracks(t) {
    for (const f of D.fighters) {
      const end = lastAlive(f, t);
      if (end < 0) continue;
      const col = D.colours[f.team];
      ctx.lineWidth = 1;
      ctx.strokeStyle = rgba(col, 0.18);
      ctx.beginPath();
      ctx.moveTo(px(f.x[0]), py(f.y[0]));
      for (let k = 1; k <= end; k++) ctx.lineTo(px(f.x[k]), py(f.y[k]));
      ctx.stroke();
      const start = Math.max(0, end - TRAIL);
      ctx.lineWidth = 2.5;
      for (let k = start; k < end; k++) {
        ctx.strokeStyle = rgba(col, 0.15 + 0.85 * (k - start + 1) / Math.max(1, end - start));
        ctx.beginPath();
        ctx.moveTo(px(f.x[k]), py(f.y[k]));
        ctx.lineTo(px(f.x[k + 1]), py(f.y[k + 1]));
        ctx.stroke();
      }
    }
  }

  function drawMissiles(t) {
    for (const m of D.flights) {
      const k = t - m.start;
      if (k < 0 || k >= m.x.length) continue;
      const col = D.colours[D.fighters[m.owner].team];
      const s = Math.max(0, k - MISSILE_TRAIL);
      ctx.lineWidth = 1.5;
      for (let j = s; j < k; j++) {
        ctx.strokeStyle = rgba(col, 0.1 + 0.6 * (j - s + 1) / Math.max(1, k - s));
        ctx.beginPath();
        ctx.moveTo(px(m.x[j]), py(m.y[j]));
        ctx.lineTo(px(m.x[j + 1]), py(m.y[j + 1]));
        ctx.stroke();
      }
      ctx.fillStyle = col;
      ctx.strokeStyle = "#fff";
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.arc(px(m.x[k]), py(m.y[k]), 3.2, 0, 2 * Math.PI);
      ctx.fill();
      ctx.stroke();
      if (labelsBox.checked) {  // whose missile, on whom: "A2>B1"
        ctx.fillStyle = rgba(col, 0.9);
        ctx.font = "10px sans-serif";
        ctx.fillText(m.label, px(m.x[k]) + 5, py(m.y[k]) + 12);
      }
    }
  }

  function drawMarkers(t) {
    for (const mk of D.markers) {
      if (mk.frame > t) continue;
      const col = D.colours[D.fighters[mk.fighter].team];
      const x = px(mk.x), y = py(mk.y);
      if (mk.kind === "launch") {
        ctx.strokeStyle = rgba(col, 0.7);
        ctx.lineWidth = 1.5;
        ctx.beginPath();
        ctx.arc(x, y, 4.5, 0, 2 * Math.PI);
        ctx.stroke();
      } else {
        ctx.strokeStyle = col;
        ctx.lineWidth = 3.5;
        ctx.beginPath();
        ctx.moveTo(x - 8, y - 8); ctx.lineTo(x + 8, y + 8);
        ctx.moveTo(x - 8, y + 8); ctx.lineTo(x + 8, y - 8);
        ctx.stroke();
        if (mk.kind === "left_arena") {
          ctx.fillStyle = col;
          ctx.font = "12px sans-serif";
          ctx.fillText("left the arena", x + 10, y + 14);
        }
      }
    }
  }

  function drawFighters(t) {
    ctx.font = "12px sans-serif";
    for (const f of D.fighters) {
      if (!f.alive[t]) continue;
      const x = px(f.x[t]), y = py(f.y[t]);
      ctx.save();
      ctx.translate(x, y);
      ctx.rotate(-f.heading[t]);
      ctx.beginPath();
      ctx.moveTo(11, 0); ctx.lineTo(-7, 6.5); ctx.lineTo(-4, 0); ctx.lineTo(-7, -6.5);
      ctx.closePath();
      ctx.fillStyle = D.colours[f.team];
      ctx.fill();
      ctx.strokeStyle = "#000";
      ctx.lineWidth = 1;
      ctx.stroke();
      ctx.restore();
      ctx.fillStyle = "#333";
      ctx.fillText(f.label, x + 10, y - 10);
    }
  }

  function drawHud(t) {
    ctx.fillStyle = "rgba(255,255,255,0.88)";
    ctx.fillRect(0, 0, 250, 46);
    ctx.fillStyle = "#000";
    ctx.font = "14px sans-serif";
    ctx.fillText("t = " + (t * D.decision_s).toFixed(1) + " s   (decision " + t + ")", 8, 19);
    const r = D.min_range[t];
    ctx.fillText(r === null ? "range: -" : "range: " + r.toFixed(1) + " km", 8, 38);
    if (t === T - 1) {
      ctx.fillStyle = "rgba(255,255,255,0.9)";
      ctx.fillRect(0, H - 30, W, 30);
      ctx.fillStyle = "#000";
      ctx.font = "bold 15px sans-serif";
      ctx.fillText(D.result, 10, H - 10);
    }
  }

  // The range/time chart: every opposing pair (thin) and the closest one (thick), cursor at t.
  let rangeMax = 0;
  for (const r of D.ranges) for (const v of r) if (v !== null && v > rangeMax) rangeMax = v;
  rangeMax = rangeMax > 0 ? rangeMax * 1.08 : 1;
  const CL = 48, CR = 12, CT = 12, CB = 26;
  const chartX = (k) => CL + (chart.width - CL - CR) * (T > 1 ? k / (T - 1) : 0);
  const chartY = (v) => CT + (chart.height - CT - CB) * (1 - v / rangeMax);
  function plotSeries(values, style, width) {
    cctx.strokeStyle = style;
    cctx.lineWidth = width;
    cctx.beginPath();
    let pen = false;
    for (let k = 0; k < T; k++) {
      const v = values[k];
      if (v === null) { pen = false; continue; }
      if (pen) cctx.lineTo(chartX(k), chartY(v)); else cctx.moveTo(chartX(k), chartY(v));
      pen = true;
    }
    cctx.stroke();
  }
  function drawChart(t) {
    const w = chart.width, h = chart.height;
    cctx.fillStyle = "#fff";
    cctx.fillRect(0, 0, w, h);
    cctx.strokeStyle = "#ccc";
    cctx.lineWidth = 1;
    cctx.strokeRect(CL, CT, w - CL - CR, h - CT - CB);
    cctx.fillStyle = "#666";
    cctx.font = "11px sans-serif";
    cctx.textAlign = "right";
    for (const v of [0, rangeMax / 2, rangeMax]) cctx.fillText(v.toFixed(0), CL - 5, chartY(v) + 4);
    cctx.textAlign = "left";
    const secs = (T - 1) * D.decision_s;
    for (let i = 0; i <= 5; i++) {
      cctx.textAlign = i === 0 ? "left" : i === 5 ? "right" : "center";
      cctx.fillText((secs * i / 5).toFixed(0) + " s", chartX((T - 1) * i / 5), h - 8);
    }
    cctx.textAlign = "left";
    cctx.save();
    cctx.translate(13, CT + (h - CT - CB) / 2 + 26);
    cctx.rotate(-Math.PI / 2);
    cctx.fillText("range, km", 0, 0);
    cctx.restore();
    if (D.ranges.length > 1) for (const r of D.ranges) plotSeries(r, "rgba(120,120,120,0.45)", 1);
    plotSeries(D.min_range, "#333", 2);
    for (const mk of D.markers) {
      const col = D.colours[D.fighters[mk.fighter].team];
      const x = chartX(mk.frame);
      cctx.strokeStyle = col;
      cctx.fillStyle = col;
      if (mk.kind === "launch") {
        cctx.lineWidth = 1.5;
        cctx.beginPath(); cctx.moveTo(x, CT); cctx.lineTo(x, CT + 7); cctx.stroke();
      } else {
        cctx.lineWidth = 2;
        const y = h - CB - 6;
        cctx.beginPath();
        cctx.moveTo(x - 4, y - 4); cctx.lineTo(x + 4, y + 4);
        cctx.moveTo(x - 4, y + 4); cctx.lineTo(x + 4, y - 4);
        cctx.stroke();
      }
    }
    cctx.strokeStyle = "#e67e22";
    cctx.lineWidth = 2;
    cctx.beginPath();
    cctx.moveTo(chartX(t), CT);
    cctx.lineTo(chartX(t), h - CB);
    cctx.stroke();
    const r = D.min_range[t];
    if (r !== null) {
      cctx.fillStyle = "#e67e22";
      cctx.beginPath();
      cctx.arc(chartX(t), chartY(r), 4, 0, 2 * Math.PI);
      cctx.fill();
    }
  }

  // The side panel.
  $("title").textContent = D.title;
  $("result").textContent = D.result;
  const sides = $("sides");
  D.sides.forEach((name, team) => {
    const row = document.createElement("div");
    const sw = document.createElement("span");
    sw.className = "swatch";
    sw.style.background = D.colours[team];
    row.appendChild(sw);
    row.appendChild(document.createTextNode("team " + team + ": " + name));
    sides.appendChild(row);
  });
  const cells = D.fighters.map((f) => {
    const tr = document.createElement("tr");
    const tds = [0, 1, 2, 3].map(() => document.createElement("td"));
    tds[0].textContent = f.label;
    tds[0].style.color = D.colours[f.team];
    tds.forEach((td) => tr.appendChild(td));
    document.querySelector("#fighters tbody").appendChild(tr);
    return tds;
  });
  $("info").textContent = D.game.name + " " + D.game.team_sizes.join("v") + ", game " + D.game.game_number +
    " (env seed " + D.game.seed + ", match " + D.game.match_index + "), " + T + " decisions";
  function updatePanel(t) {
    D.fighters.forEach((f, i) => {
      cells[i][1].textContent = f.alive[t] ? "flying" : "down";
      cells[i][2].textContent = String(f.missiles[t]);
      cells[i][3].textContent = f.alive[t] ? f.speed[t] + " m/s" : "-";
    });
  }

  function render() {
    drawBackground();
    drawTracks(frame);
    drawMarkers(frame);
    drawMissiles(frame);
    drawFighters(frame);
    drawHud(frame);
    drawChart(frame);
    updatePanel(frame);
    scrub.value = String(frame);
    const now = (frame * D.decision_s).toFixed(1), end = ((T - 1) * D.decision_s).toFixed(1);
    clock.textContent = now + " / " + end + " s";
    document.body.dataset.frame = String(frame);
  }
  function setFrame(i) {
    const n = Math.round(Number(i));
    frame = Math.max(0, Math.min(T - 1, Number.isFinite(n) ? n : 0));
    render();
    return frame;
  }
  function play() {
    if (frame >= T - 1) setFrame(0);
    playing = true;
    lastTs = null;
    carry = 0;
    playBtn.textContent = "Pause";
    requestAnimationFrame(tick);
  }
  function pause() {
    playing = false;
    playBtn.textContent = "Play";
  }
  function tick(ts) {
    if (!playing) return;
    if (lastTs !== null) {
      carry += (ts - lastTs) / 1000 * Number(speedSel.value) / D.decision_s;
      const n = Math.floor(carry);
      if (n > 0) {
        carry -= n;
        if (frame + n >= T - 1) { setFrame(T - 1); pause(); return; }
        setFrame(frame + n);
      }
    }
    lastTs = ts;
    requestAnimationFrame(tick);
  }

  scrub.max = String(T - 1);
  playBtn.addEventListener("click", () => (playing ? pause() : play()));
  scrub.addEventListener("input", () => setFrame(scrub.value));
  scrub.addEventListener("change", () => setFrame(scrub.value));
  chart.addEventListener("click", (e) => {
    const box = chart.getBoundingClientRect();
    const x = (e.clientX - box.left) * chart.width / box.width;
    setFrame((x - CL) / (chart.width - CL - CR) * (T - 1));
  });
  document.addEventListener("keydown", (e) => {
    if (e.target === speedSel) return;
    if (e.key === " ") {
      e.preventDefault();
      if (playing) pause(); else play();
    } else if ((e.key === "ArrowRight" || e.key === "ArrowLeft") && e.target !== scrub) {
      e.preventDefault();
      setFrame(frame + (e.key === "ArrowRight" ? 1 : -1) * (e.shiftKey ? 10 : 1));
    } else if (e.key === "Home" || e.key === "End") {
      e.preventDefault();
      setFrame(e.key === "Home" ? 0 : T - 1);
    }
  });
  labelsBox.addEventListener("change", () => setFrame(frame));
  window.replayViewer = {
    get frame() { return frame; },
    get frames() { return T; },
    get playing() { return playing; },
    setFrame, play, pause,
  };
  setFrame(0);
})();
</script>
</body>
</html>
"""
