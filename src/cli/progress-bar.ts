import type { RunProgress } from '../pipeline/progress.js';

/**
 * A progress bar on stderr when it is a terminal (rows, rows/s, ETA); nothing otherwise.
 * cli-progress (and the string-width modules it pulls in) is loaded only when a bar is shown: a
 * run with --json or without a terminal starts without it.
 */
export async function createProgressBar(enabled: boolean): Promise<{ update: (p: RunProgress) => void; stop: () => void }> {
  if (!enabled || !process.stderr.isTTY) return { update: () => {}, stop: () => {} };
  const { default: cliProgress } = await import('cli-progress');
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
