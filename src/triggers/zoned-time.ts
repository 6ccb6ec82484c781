/**
 * A moment as the wall clock of a time zone shows it, in ISO 8601 with the zone's offset at that
 * moment, to the second (fire times are whole seconds): `2026-11-24T02:00:00+01:00` in
 * Europe/Paris, `2026-11-24T01:00:00+00:00` in UTC.
 */
export function zonedIso(at: Date, tz: string): string {
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
  const wall = `${part('year')}-${part('month')}-${part('day')}T${part('hour')}:${part('minute')}:${part('second')}`;
  // The offset is what the wall clock, read as UTC, is ahead of the moment (to the second).
  const offsetMinutes = Math.round((Date.parse(`${wall}Z`) - Math.floor(at.getTime() / 1000) * 1000) / 60_000);
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  return `${wall}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}
