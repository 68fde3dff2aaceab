// The HTML report's style sheet and script (html_report.cc puts them in the page). The
// script reads the JSON block #podsim-data (one entry per run, see run_data()) and draws,
// per run: the timeline of the selected chip on a canvas (wheel zooms about the pointer,
// drag pans, double-click shows the whole run; a segment's op shows under the pointer),
// the units' busy shares and the roofline with Chart.js, the torus heat map as SVG and
// the chips' step times; it makes tables of class "sortable" sort by a clicked column.
namespace podsim::traces {

extern const char kReportStyle[] = R"CSS(
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; max-width: 1500px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 1.5em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1em; margin: 0.8em 0 0.3em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { padding: 2px 8px; border-bottom: 1px solid #eee; text-align: left; white-space: nowrap; }
th { background: #f4f4f4; cursor: default; } table.sortable th { cursor: pointer; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.better { background: #dff3df; } td.worse { background: #f8d9d9; } td.changed { background: #fff3cd; }
tr.highlight td { background: #ffe9a8; }
.row { display: flex; gap: 2em; flex-wrap: wrap; } .chart { flex: 1 1 600px; min-width: 400px; }
.timeline { position: relative; } .timeline canvas { width: 100%; border: 1px solid #ddd; cursor: grab; }
.tip { position: absolute; display: none; background: #fff; border: 1px solid #999; padding: 2px 6px;
       font-size: 12px; pointer-events: none; white-space: nowrap; }
.legend span { display: inline-block; margin-right: 1em; font-size: 12px; }
.legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: middle; }
.hint { font-weight: normal; color: #777; font-size: 12px; }
.ops { font-size: 13px; } .heat svg { max-width: 100%; }
)CSS";

extern const char kReportScript[] = R"JS(
(function () {
  'use strict';
  var COLORS = {collective: '#d62728', mxu: '#1f77b4', vpu: '#2ca02c', scalar: '#9467bd', dma: '#ff7f0e',
                hbm: '#8c564b', ici: '#17becf', dcn: '#bcbd22', host: '#7f7f7f', other: '#c7c7c7'};
  var runs = JSON.parse(document.getElementById('podsim-data').textContent);

  function seconds(s) {
    if (s === null || isNaN(s)) return 'n/a';
    var a = Math.abs(s);
    if (a >= 1) return s.toPrecision(4) + ' s';
    if (a >= 1e-3) return (s * 1e3).toPrecision(4) + ' ms';
    if (a >= 1e-6) return (s * 1e6).toPrecision(4) + ' us';
    return (s * 1e9).toPrecision(4) + ' ns';
  }

  function si(v) {
    var units = [[1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
    for (var k = 0; k < units.length; k++) if (Math.abs(v) >= units[k][0]) return +(v / units[k][0]).toPrecision(3) + units[k][1];
    return +v.toPrecision(3) + '';
  }

  function timeline(run, index) {
    var canvas = document.getElementById('timeline-' + index);
    var tip = document.getElementById('tip-' + index);
    var select = document.getElementById('chip-select-' + index);
    var legend = document.getElementById('legend-' + index);
    run.categories.forEach(function (c) {
      var s = document.createElement('span');
      s.innerHTML = '<i style="background:' + COLORS[c] + '"></i>' + c;
      legend.appendChild(s);
    });
    var slowest = 0;
    run.chips.forEach(function (chip, k) {
      var o = document.createElement('option');
      o.value = k;
      o.textContent = chip.name + ' (' + seconds(chip.seconds) + ')';
      select.appendChild(o);
      if (chip.cycles > run.chips[slowest].cycles) slowest = k;
    });
    select.value = slowest;
    var ROW = 18, LABEL = 230, AXIS = 22;
    var view = null, chip = null;
    function draw() {
      var ctx = canvas.getContext('2d');
      var width = canvas.clientWidth || 1200;
      canvas.width = width;
      canvas.height = AXIS + ROW * chip.tracks.length + 4;
      ctx.font = '12px system-ui, sans-serif';
      ctx.fillStyle = '#fff';
      ctx.fillRect(0, 0, canvas.width, canvas.height);
      var span = view[1] - view[0], plot = width - LABEL - 8;
      var x = function (c) { return LABEL + (c - view[0]) / span * plot; };
      ctx.fillStyle = '#555';
      for (var t = 0; t <= 5; t++) {
        var c = view[0] + span * t / 5;
        ctx.fillText(seconds(c / chip.clock_hz), x(c) - (t === 5 ? 50 : 0), 14);
        ctx.fillRect(x(c), 16, 1, 4);
      }
      chip.tracks.forEach(function (track, r) {
        var y = AXIS + r * ROW;
        ctx.fillStyle = r % 2 ? '#fafafa' : '#f2f2f2';
        ctx.fillRect(LABEL, y, plot, ROW - 2);
        ctx.fillStyle = '#333';
        ctx.fillText(track.name.length > 34 ? track.name.slice(0, 33) + '…' : track.name, 4, y + 12);
        var segs = track.segments;
        for (var k = 0; k < segs.length; k++) {
          var s = segs[k];
          if (s[1] < view[0] || s[0] > view[1]) continue;
          var x0 = Math.max(x(s[0]), LABEL), x1 = Math.min(x(s[1]), LABEL + plot);
          ctx.fillStyle = COLORS[run.categories[s[2]]];
          ctx.fillRect(x0, y + 1, Math.max(x1 - x0, 1), ROW - 4);
        }
      });
    }
    function pick(chipIndex) {
      chip = run.chips[chipIndex];
      view = [0, Math.max(chip.cycles, 1)];
      draw();
      if (busyChart) {
        busyChart.data.labels = chip.tracks.map(function (t) { return t.name; });
        busyChart.data.datasets[0].data = chip.tracks.map(function (t) { return t.busy === null ? 0 : 100 * t.busy; });
        busyChart.data.datasets[0].backgroundColor = chip.tracks.map(function (t) { return COLORS[t.category] || COLORS.other; });
        busyChart.update();
      }
    }
    var busyChart = null;
    select.addEventListener('change', function () { pick(+select.value); });
    canvas.addEventListener('wheel', function (e) {
      e.preventDefault();
      var rect = canvas.getBoundingClientRect(), plot = rect.width - LABEL - 8;
      var f = Math.min(Math.max((e.clientX - rect.left - LABEL) / plot, 0), 1);
      var at = view[0] + f * (view[1] - view[0]);
      var scale = e.deltaY < 0 ? 0.8 : 1.25;
      var len = Math.max((view[1] - view[0]) * scale, 10);
      view = [Math.max(0, at - f * len), Math.min(chip.cycles, at - f * len + len)];
      draw();
    }, {passive: false});
    var drag = null;
    canvas.addEventListener('mousedown', function (e) { drag = {x: e.clientX, view: view.slice()}; });
    window.addEventListener('mouseup', function () { drag = null; });
    canvas.addEventListener('dblclick', function () { view = [0, chip.cycles]; draw(); });
    canvas.addEventListener('mousemove', function (e) {
      var rect = canvas.getBoundingClientRect(), plot = rect.width - LABEL - 8;
      if (drag) {
        var shift = (e.clientX - drag.x) / plot * (drag.view[1] - drag.view[0]);
        var len = drag.view[1] - drag.view[0];
        var start = Math.min(Math.max(drag.view[0] - shift, 0), Math.max(chip.cycles - len, 0));
        view = [start, start + len];
        draw();
        return;
      }
      var r = Math.floor((e.clientY - rect.top - AXIS) / ROW), px = e.clientX - rect.left;
      var track = chip.tracks[r], hit = null;
      if (track && px > LABEL) {
        var c = view[0] + (px - LABEL) / plot * (view[1] - view[0]), slack = (view[1] - view[0]) / plot * 2;
        track.segments.forEach(function (s) { if (c >= s[0] - slack && c <= s[1] + slack) hit = s; });
      }
      if (!hit) { tip.style.display = 'none'; return; }
      var op = hit[3] >= 0 ? run.op_names[hit[3]] : '(no source op)';
      tip.textContent = track.name + ': ' + op + ' [' + run.categories[hit[2]] + '] ' +
                        seconds((hit[1] - hit[0]) / chip.clock_hz) + ' at ' + seconds(hit[0] / chip.clock_hz);
      tip.style.left = (px + 12) + 'px';
      tip.style.top = (e.clientY - rect.top + 12) + 'px';
      tip.style.display = 'block';
    });
    busyChart = new Chart(document.getElementById('busy-' + index), {
      type: 'bar',
      data: {labels: [], datasets: [{label: 'busy %', data: []}]},
      options: {indexAxis: 'y', animation: false, plugins: {legend: {display: false}},
                scales: {x: {min: 0, max: 100, title: {display: true, text: '% of the chip\'s time'}},
                         y: {ticks: {autoSkip: false, font: {size: 10}}}}}
    });
    pick(slowest);
  }

  function roofline(run, index) {
    var ops = run.ops.map(function (op, k) { return {op: op, k: k}; })
                     .filter(function (o) { return o.op.intensity !== null && o.op.achieved !== null; });
    var points = ops.map(function (o) { return {x: o.op.intensity, y: o.op.achieved}; });
    var datasets = [{
      type: 'scatter', label: 'ops', data: points,
      backgroundColor: ops.map(function (o) { return o.op.collective ? COLORS.collective : o.op.matmul ? COLORS.mxu : COLORS.vpu; }),
      pointRadius: 5
    }];
    if (run.peak_flops > 0 && run.peak_hbm_bytes > 0) {
      var lo = 0.01, hi = 1e5, ridge = run.peak_flops / run.peak_hbm_bytes;
      points.forEach(function (p) { lo = Math.min(lo, p.x / 2); hi = Math.max(hi, p.x * 2); });
      datasets.push({type: 'line', label: 'roofline', data: [{x: lo, y: lo * run.peak_hbm_bytes},
                     {x: ridge, y: run.peak_flops}, {x: hi, y: run.peak_flops}],
                     borderColor: '#444', pointRadius: 0, borderWidth: 1.5});
    }
    new Chart(document.getElementById('roofline-' + index), {
      type: 'scatter', data: {datasets: datasets},
      options: {
        animation: false,
        scales: {x: {type: 'logarithmic', title: {display: true, text: 'FLOPs per HBM byte'}, ticks: {callback: si}},
                 y: {type: 'logarithmic', title: {display: true, text: 'FLOP/s (per chip)'}, ticks: {callback: si}}},
        plugins: {tooltip: {callbacks: {label: function (c) {
          if (c.datasetIndex !== 0) return 'roofline';
          var op = ops[c.dataIndex].op;
          return op.name + ' (' + op.opcode + '): ' + c.parsed.y.toPrecision(3) + ' FLOP/s, ' +
                 (100 * op.achieved / op.bound).toFixed(1) + '% of its roof';
        }}}},
        onClick: function (e, elements) {
          var hit = elements.filter(function (el) { return el.datasetIndex === 0; })[0];
          if (!hit) return;
          var row = document.getElementById('op-' + index + '-' + ops[hit.index].k);
          document.querySelectorAll('tr.highlight').forEach(function (r) { r.classList.remove('highlight'); });
          row.classList.add('highlight');
          row.scrollIntoView({block: 'center'});
        }
      }
    });
  }

  function heatColor(u) {
    if (u === null) return '#ccc';
    u = Math.min(Math.max(u, 0), 1);
    return 'rgb(' + Math.round(230 - 30 * u) + ',' + Math.round(230 - 200 * u) + ',' + Math.round(230 - 210 * u) + ')';
  }

  function torus(run, index) {
    var host = document.getElementById('heat-' + index);
    if (!host) return;
    var coords = run.chips.map(function (c) { return c.coords; });
    if (coords.some(function (c) { return c === null; })) {
      host.textContent = 'The chips of this profile carry no torus coordinates.';
      return;
    }
    var dims = [0, 0, 0];
    coords.forEach(function (c) { for (var d = 0; d < 3; d++) dims[d] = Math.max(dims[d], c[d] + 1); });
    var cell = Math.max(24, Math.min(70, Math.floor(560 / Math.max(dims[0], dims[1]))));
    var gap = cell, sliceWidth = dims[0] * cell + gap;
    var width = Math.max(dims[2] * sliceWidth + 20, 480), height = dims[1] * cell + 40;
    var ns = 'http://www.w3.org/2000/svg';
    var svg = document.createElementNS(ns, 'svg');
    svg.setAttribute('width', width);
    svg.setAttribute('height', height);
    var centre = function (c) { return [10 + c[2] * sliceWidth + c[0] * cell + cell / 2, 25 + c[1] * cell + cell / 2]; };
    function add(tag, attrs, title) {
      var e = document.createElementNS(ns, tag);
      for (var k in attrs) e.setAttribute(k, attrs[k]);
      if (title) { var t = document.createElementNS(ns, 'title'); t.textContent = title; e.appendChild(t); }
      svg.appendChild(e);
      return e;
    }
    for (var z = 0; z < dims[2]; z++)
      if (dims[2] > 1) add('text', {x: 10 + z * sliceWidth, y: 15, 'font-size': 12}).textContent = run.columns[z];
    var slowest = Math.max.apply(null, run.chips.map(function (c) { return c.seconds; }));
    run.chips.forEach(function (chip) {
      var p = centre(chip.coords), s = cell * 0.42;
      add('rect', {x: p[0] - s / 2, y: p[1] - s / 2, width: s, height: s, rx: 3,
                   fill: chip.seconds < 0.98 * slowest ? '#e8f0fe' : '#fff', stroke: '#555'},
          chip.name + ': ' + seconds(chip.seconds));
    });
    run.links.forEach(function (link) {
      var a = run.chips[link.from], b = run.chips[link.to];
      if (!a || !b) return;
      var p = centre(a.coords), q = centre(b.coords), s = cell * 0.21;
      var dx = Math.sign(q[0] - p[0]), dy = Math.sign(q[1] - p[1]);
      var adjacent = Math.abs(a.coords[0] - b.coords[0]) + Math.abs(a.coords[1] - b.coords[1]) === 1 && a.coords[2] === b.coords[2];
      var end;
      if (adjacent) {
        end = [q[0] - dx * s, q[1] - dy * s];
      } else {  // a wraparound or z link: a stub pointing along its axis
        var axis = link.axis.charAt(0), sign = link.axis.charAt(1) === '-' ? -1 : 1;
        var ux = axis === 'x' ? sign : 0, uy = axis === 'y' ? sign : 0;
        if (axis === 'z') { ux = 0.7 * sign; uy = -0.7 * sign; }
        dx = ux; dy = uy;
        end = [p[0] + ux * cell * 0.48, p[1] + uy * cell * 0.48];
      }
      var off = 3, ox = -dy * off, oy = dx * off;  // each direction on its own side
      add('line', {x1: p[0] + dx * s + ox, y1: p[1] + dy * s + oy, x2: end[0] + ox, y2: end[1] + oy,
                   stroke: heatColor(link.util), 'stroke-width': 4, 'data-util': link.util === null ? '' : link.util},
          link.name + ': ' + (link.util === null ? 'n/a' : (100 * link.util).toFixed(1) + '% busy'));
    });
    var scale = add('text', {x: 10, y: height - 4, 'font-size': 11});
    scale.textContent = 'links: light = idle, dark red = busy the whole step; blue chips finished early';
    host.appendChild(svg);
  }

  function chipTimes(run, index) {
    var canvas = document.getElementById('chip-times-' + index);
    if (!canvas) return;
    var times = run.chips.map(function (c) { return c.seconds * 1e6; });
    var sorted = times.slice().sort(function (a, b) { return a - b; });
    var median = sorted[Math.floor(sorted.length / 2)];
    new Chart(canvas, {
      type: 'bar',
      data: {labels: run.chips.map(function (c, k) { return String(k); }),
             datasets: [{label: 'us', data: times,
                         backgroundColor: times.map(function (t) { return t > 1.02 * median ? COLORS.collective : COLORS.mxu; })}]},
      options: {animation: false, plugins: {legend: {display: false}},
                scales: {y: {title: {display: true, text: 'step time (us); red: over 2% past the median'}},
                         x: {title: {display: true, text: 'chip'}}}}
    });
  }

  function sortable(table) {
    table.querySelectorAll('th').forEach(function (th, column) {
      var ascending = false;
      th.addEventListener('click', function () {
        var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
        ascending = !ascending;
        rows.sort(function (a, b) {
          var x = a.cells[column].dataset.value, y = b.cells[column].dataset.value;
          var nx = parseFloat(x), ny = parseFloat(y), r;
          if (!isNaN(nx) || !isNaN(ny)) r = (isNaN(nx) ? -Infinity : nx) - (isNaN(ny) ? -Infinity : ny);
          else r = String(x).localeCompare(String(y));
          return ascending ? r : -r;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  }

  runs.forEach(function (run, k) {
    timeline(run, k);
    roofline(run, k);
    torus(run, k);
    chipTimes(run, k);
  });
  document.querySelectorAll('table.sortable').forEach(sortable);
  // Milliseconds from the page's navigation to the last chart drawn.
  document.body.dataset.renderMs = Math.round(performance.now());
  if (!window.podsimErrors.length) document.body.dataset.render = 'done';
})();
)JS";

}  // namespace podsim::traces
