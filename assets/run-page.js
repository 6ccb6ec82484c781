/* global document, window, getComputedStyle */
// The run page's charts: reads the chart specs the server embedded as JSON (see ChartSpec in
// src/http/run-page-html.ts) and draws each on its canvas with Chart.js. Plain JavaScript, served
// as is: the pages have no front-end build, and no inline script under their Content-Security-Policy.
(function () {
  'use strict';
  var data = document.getElementById('run-charts');
  if (!data || !window.Chart) return;
  var Chart = window.Chart;
  var specs = JSON.parse(data.textContent);
  var style = getComputedStyle(document.documentElement);
  var palette = function (name) {
    return style.getPropertyValue('--chart-' + name).trim() || '#4f46e5';
  };
  var grid = style.getPropertyValue('--chart-grid').trim() || '#e5e7eb';
  var text = style.getPropertyValue('--muted').trim() || '#6b7280';

  Chart.defaults.font.family = style.getPropertyValue('font-family');
  Chart.defaults.color = text;
  Chart.defaults.animation = false;

  // A logarithmic axis's labels: its powers of ten only (1, 10, 100, ...), as counts.
  var powerOfTen = function (value) {
    var exponent = Math.log10(value);
    return value >= 1 && Math.abs(exponent - Math.round(exponent)) < 1e-9 ? value.toLocaleString('en-US') : '';
  };

  // Measures over a pipeline's runs: a line per series, a point per run (a gap where a run has
  // none), and the run's note (its id, the columns that moved) in the tooltip.
  var trend = function (canvas, spec, axis) {
    new Chart(canvas, {
      type: 'line',
      data: {
        labels: spec.labels,
        datasets: spec.series.map(function (s) {
          var color = palette(s.color);
          return { label: s.label, data: s.values, borderColor: color, backgroundColor: color, pointRadius: 3, spanGaps: true };
        }),
      },
      options: {
        maintainAspectRatio: false,
        interaction: { mode: 'index', intersect: false },
        plugins: {
          legend: { display: spec.series.length > 1, labels: { boxWidth: 12 } },
          tooltip: {
            callbacks: {
              footer: function (items) {
                return items.length > 0 && spec.notes ? spec.notes[items[0].dataIndex] : '';
              },
            },
          },
        },
        scales: {
          x: axis(spec.xTitle, { grid: { display: false }, ticks: { maxRotation: 45, autoSkip: true } }),
          y: axis(spec.yTitle, { beginAtZero: true }),
        },
      },
    });
  };

  specs.forEach(function (spec) {
    var canvas = document.getElementById(spec.canvas);
    if (!canvas) return;
    var color = palette(spec.color);
    var axis = function (title, extra) {
      var scale = { title: { display: true, text: title }, grid: { color: grid }, border: { display: false } };
      for (var k in extra) scale[k] = extra[k];
      return scale;
    };
    if (spec.kind === 'trend') return trend(canvas, spec, axis);
    var line = spec.kind === 'line';
    new Chart(canvas, {
      type: line ? 'line' : 'bar',
      data: line
        ? {
            datasets: [
              {
                label: spec.label,
                data: spec.points,
                borderColor: color,
                backgroundColor: color + '33',
                fill: true,
                pointRadius: 0,
                stepped: spec.stepped ? 'after' : false,
              },
            ],
          }
        : {
            labels: spec.labels,
            datasets: [
              {
                label: spec.label,
                data: spec.values,
                backgroundColor: color + 'cc',
                hoverBackgroundColor: color,
                borderRadius: spec.contiguous ? 0 : 3,
                categoryPercentage: spec.contiguous ? 1 : 0.8,
                barPercentage: spec.contiguous ? 0.96 : 0.9,
              },
            ],
          },
      options: {
        maintainAspectRatio: false,
        interaction: { mode: 'index', intersect: false },
        plugins: { legend: { display: false } },
        scales: {
          x: line
            ? axis(spec.xTitle, { type: 'linear', min: 0, max: spec.points[spec.points.length - 1].x })
            : axis(spec.xTitle, { grid: { display: false }, ticks: { maxRotation: 45, autoSkip: true } }),
          // A log axis starts below 1, so that a bar of one row still shows.
          y: spec.logarithmic
            ? axis(spec.yTitle, { type: 'logarithmic', min: 0.5, ticks: { callback: powerOfTen } })
            : axis(spec.yTitle, { beginAtZero: true, ticks: { precision: 0 } }),
        },
      },
    });
  });
})();
