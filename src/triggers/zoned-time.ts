/** A moment on a time zone's wall clock, each part as two digits (the year as four). */
interface WallClock {
  year: string;
  month: string;
  day: string;
  hour: string;
  minute: string;
  second: string;
}

/** What the wall clock of `tz` shows at a moment, to the second. */
export function wallClock(at: Date, tz: string): WallClock {
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone: tz,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(at);
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? '';
  return { year: part('year'), month: part('month'), day: part('day'), hour: part('hour'), minute: part('minute'), second: part('second') };
}

/**
 * A moment as the wall clock of a time zone shows it, in ISO 8601 with the zone's offset at that
 * moment, to the second (fire times are whole seconds): `2026-11-24T02:00:00+01:00` in
 * Europe/Paris, `2026-11-24T01:00:00+00:00` in UTC.
 */
export function zonedIso(at: Date, tz: string): string {
  const c = wallClock(at, tz);
  const wall = `${c.year}-${c.month}-${c.day}T${c.hour}:${c.minute}:${c.second}`;
  // The offset is what the wall clock, read as UTC, is ahead of the moment (to the second).
  const offsetMinutes = Math.round((Date.parse(`${wall}Z`) - Math.floor(at.getTime() / 1000) * 1000) / 60_000);
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  return `${wall}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/** Whether `tz` is an IANA time zone this Node knows (`UTC`, `Europe/Paris`). */
export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
