/**
 * The growth plot as hand-written SVG (no charting dependency): two panels side by side, seconds
 * and peak RSS MiB against rows on a log x axis, each point labelled with its value.
 */

export interface GrowthPoint {
  rows: number;
  seconds: number;
  peakRssMiB: number;
}

const WIDTH = 900;
const HEIGHT = 380;
const PANEL = { width: 380, height: 250, top: 70 };
const LEFTS = [70, 520];

export function growthSvg(title: string, points: readonly GrowthPoint[]): string {
  const panels = [panel(LEFTS[0], 'time (s)', points, (p) => p.seconds, '#1f77b4'), panel(LEFTS[1], 'peak RSS (MiB)', points, (p) => p.peakRssMiB, '#d62728')];
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${WIDTH / 2}" y="28" text-anchor="middle" font-size="15" font-weight="bold">${escape(title)}</text>`,
    ...panels,
    '</svg>',
    '',
  ].join('\n');
}

/** One panel: axes, ticks, the polyline and the labelled points of one figure. */
function panel(left: number, yLabel: string, points: readonly GrowthPoint[], value: (p: GrowthPoint) => number, colour: string): string {
  const { width, height, top } = PANEL;
  const bottom = top + height;
  // Log x: each decade the same width. Half a decade of margin each side keeps the labels inside.
  const logs = points.map((p) => Math.log10(p.rows));
  const [xMin, xMax] = [Math.min(...logs) - 0.5, Math.max(...logs) + 0.5];
  const x = (rows: number) => tenth(left + ((Math.log10(rows) - xMin) / (xMax - xMin)) * width);
  const yMax = niceCeiling(Math.max(...points.map(value)) * 1.15);
  const y = (v: number) => tenth(bottom - (v / yMax) * height);

  const parts = [
    `<line x1="${left}" y1="${bottom}" x2="${left + width}" y2="${bottom}" stroke="black"/>`,
    `<line x1="${left}" y1="${top}" x2="${left}" y2="${bottom}" stroke="black"/>`,
    `<text x="${left + width / 2}" y="${bottom + 40}" text-anchor="middle">rows (log scale)</text>`,
    `<text transform="translate(${left - 48} ${top + height / 2}) rotate(-90)" text-anchor="middle">${escape(yLabel)}</text>`,
  ];
  for (let decade = Math.ceil(xMin); decade <= Math.floor(xMax); decade++) {
    const at = x(10 ** decade);
    parts.push(`<line x1="${at}" y1="${bottom}" x2="${at}" y2="${bottom + 5}" stroke="black"/>`);
    parts.push(`<text x="${at}" y="${bottom + 18}" text-anchor="middle">${shortCount(10 ** decade)}</text>`);
  }
  for (let k = 0; k <= 4; k++) {
    const v = (yMax * k) / 4;
    parts.push(`<line x1="${left - 5}" y1="${y(v)}" x2="${left + width}" y2="${y(v)}" stroke="${k ? '#e5e5e5' : 'black'}"/>`);
    parts.push(`<text x="${left - 8}" y="${y(v) + 4}" text-anchor="end">${round(v)}</text>`);
  }
  parts.push(`<polyline fill="none" stroke="${colour}" stroke-width="2" points="${points.map((p) => `${x(p.rows)},${y(value(p))}`).join(' ')}"/>`);
  for (const p of points) {
    parts.push(`<circle cx="${x(p.rows)}" cy="${y(value(p))}" r="4" fill="${colour}"/>`);
    parts.push(`<text x="${x(p.rows)}" y="${y(value(p)) - 10}" text-anchor="middle">${round(value(p))}</text>`);
  }
  return parts.join('\n');
}

/** A round axis maximum: 1, 2 or 5 times a power of ten. */
function niceCeiling(v: number): number {
  if (v <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(v));
  return ([1, 2, 5, 10].find((m) => m * power >= v) ?? 10) * power;
}

/** Coordinates to a tenth of a pixel: shorter SVG, no visible difference. */
function tenth(v: number): number {
  return Math.round(v * 10) / 10;
}

function shortCount(n: number): string {
  return n >= 1e6 ? `${n / 1e6}M` : n >= 1e3 ? `${n / 1e3}k` : String(n);
}

function round(v: number): string {
  return v.toLocaleString('en-US', { maximumFractionDigits: v >= 100 ? 0 : 1 });
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
