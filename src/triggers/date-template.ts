import { wallClock } from './zoned-time.js';

/**
 * Date placeholders in a scheduled pipeline's input: `{date}` is the day the schedule fired for,
 * in the schedule's time zone, as YYYY-MM-DD; `{date-1d}` the day before (any number of days).
 * So `s3://exports/rentals/{date-1d}.csv` fired at 02:00 on 2026-11-23 reads `.../2026-11-22.csv`.
 */
const PLACEHOLDER = /\{([^{}]*)\}/g;
const DATE = /^date(?:-(\d{1,4})d)?$/;

/** What is wrong with the placeholders of a template, or undefined when each is one this fills. */
export function templateProblem(template: string): string | undefined {
  const unknown = [...template.matchAll(PLACEHOLDER)].map((m) => m[0]).filter((p) => !DATE.test(p.slice(1, -1)));
  if (unknown.length > 0) return `unknown placeholder(s) ${unknown.join(', ')}: use {date} or {date-Nd} (N days before), e.g. {date-1d}`;
  return undefined;
}

/** The template with each placeholder replaced by the date it names, counted from `fireTime`'s day in `tz`. */
export function fillDateTemplate(template: string, fireTime: Date, tz: string): string {
  const { year, month, day } = wallClock(fireTime, tz);
  return template.replace(PLACEHOLDER, (whole, inner: string) => {
    const match = DATE.exec(inner);
    if (!match) return whole;
    // Calendar arithmetic on the local day, in UTC where every day has 24 hours.
    const shifted = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day) - Number(match[1] ?? 0)));
    return shifted.toISOString().slice(0, 10);
  });
}
