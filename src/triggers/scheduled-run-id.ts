/**
 * The run id of a scheduled pipeline's run: the pipeline's name and the fire time in UTC, which
 * is unambiguous across daylight-saving changes (`nightly-rentals-20261123T0100Z`). Seconds are
 * added when the fire time has some (a 6-field cron): `fast-20261123T010002Z`. Derived, so the
 * same firing taken twice (a retried job) names the same run, and two firings never share one.
 */
export function scheduledRunId(pipeline: string, fireTime: Date): string {
  const iso = fireTime.toISOString(); // 2026-11-23T01:00:02.000Z
  const day = iso.slice(0, 10).replace(/-/g, '');
  const seconds = fireTime.getUTCSeconds() === 0 ? '' : iso.slice(17, 19);
  return `${pipeline}-${day}T${iso.slice(11, 13)}${iso.slice(14, 16)}${seconds}Z`;
}
