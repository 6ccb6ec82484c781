/** The units a duration may be written in, and their length in ms. */
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

/** A unit of a duration: seconds, minutes, hours, days or weeks. */
export type DurationUnit = keyof typeof UNIT_MS;

/**
 * A duration written as a whole number of one unit (`90s`, `30m`, `2h`, `30d`, `2w`), in ms; undefined
 * for any other text, or a unit not among `units` (each setting takes the units that make sense for it).
 */
export function durationMs(text: string, units: readonly DurationUnit[]): number | undefined {
  const found = /^(\d{1,9})([a-z])$/.exec(text);
  if (!found || !(units as readonly string[]).includes(found[2])) return undefined;
  return Number(found[1]) * UNIT_MS[found[2] as DurationUnit];
}
