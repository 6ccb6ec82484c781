import type { RunStatus } from '../queue/index.js';
import { RUN_STATES, shownRate } from '../scoring/index.js';
import { html, type Html } from './html.js';

/** A date and time to the second, in UTC (`2026-11-25 14:03:07 UTC`); `–` for none. */
export const dateTime = (iso: string | undefined) => (iso ? html`<time datetime="${iso}">${iso.slice(0, 19).replace('T', ' ')} UTC</time>` : '–');

/** A date and time on one line for the run list, to the minute (`2026-11-25 14:03`); the full time in its title. */
export const shortDateTime = (iso: string | undefined) =>
  iso ? html`<time datetime="${iso}" title="${iso}">${iso.slice(0, 16).replace('T', ' ')}</time>` : '–';

/** A count, exact, with thousands separators: counts are never rounded (see shortNumber). */
export const integer = (n: number) => Math.round(n).toLocaleString('en-US');

/** A measure (a quantile, mean, min, max, histogram bound) with at most 4 significant digits; never a count, which `integer` shows exact. */
export function shortNumber(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (n !== 0 && Math.abs(n) < 1e-3) return n.toExponential(2);
  return Number(n.toPrecision(4)).toLocaleString('en-US', { maximumFractionDigits: 6 });
}

/** A duration in seconds as a person says it: `42 s`, `3 min 05 s`, `2 h 07 min`. */
export function formatDuration(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

/** A size in bytes with a binary unit, to one decimal (`1.5 MiB`). */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

/** A run's rows per second as `status` and the pipeline pages say it (see shownRate). */
export function rateOf(r: Pick<RunStatus, 'result' | 'progress'>): string {
  const rate = shownRate(r);
  return rate === undefined ? '–' : integer(rate);
}

/** A run state's coloured badge; a state this release does not know still shows, in grey. */
export function stateBadge(state: string): Html {
  const known = (RUN_STATES as readonly string[]).includes(state) ? state : 'unknown';
  return html`<span class="badge badge-${known}">${state}</span>`;
}

/** A `<progress>` of `done` out of `total`, its percentage as its fallback text. */
export function progressBar(done: number, total: number): Html {
  return html`<progress value="${done}" max="${Math.max(total, 1)}">${total > 0 ? Math.floor((done * 100) / total) : 0}%</progress>`;
}
