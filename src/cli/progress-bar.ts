import cliProgress from 'cli-progress';
import type { RunProgress } from '../pipeline/progress.js';

/** A progress bar on stderr when it is a terminal (rows, rows/s, ETA); nothing otherwise. */
export function createProgressBar(enabled: boolean): { update: (p: RunProgress) => void; stop: () => void } {
  if (!enabled || !process.stderr.isTTY) return { update: () => {}, stop: () => {} };
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: '{bar} {percentage}% | {value}/{total} rows | {rate} rows/s | ETA {eta_s} | quarantined {quarantined}',
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update: (p) => {
      const payload = { rate: p.rowsPerSecond, eta_s: p.etaSeconds === null ? '?' : `${p.etaSeconds}s`, quarantined: p.rowsQuarantined };
      if (!started) {
        bar.start(p.rowsTotal, p.rowsDone, payload);
        started = true;
      } else bar.update(p.rowsDone, payload);
    },
    stop: () => started && bar.stop(),
  };
}
