import { type Drift, isSettled, readManifest } from '../scoring/index.js';
import { Gauge, type Registry } from 'prom-client';
import type { Logger } from '../log.js';
import type { RunQueue } from '../queue/index.js';
import { parseLocation, type Storage } from '../storage/index.js';

/** A pipeline's newest runs looked at for the latest one that ended: runs still going come first. */
const LATEST_RUNS = 20;

/** How long a scrape waits for the runs and their manifests; beyond it, the scrape answers without drift. */
const READ_TIMEOUT_MS = 2_000;

/** Where the drift gauge reads from: the pipelines of `jobs/*.yaml`, their runs on the queue, and the run folders. */
export interface DriftSources {
  pipelines: readonly string[];
  runs: Pick<RunQueue, 'list'>;
  storage: Storage;
}

/**
 * `batch_scorer_drift_psi{pipeline, column, of}`: each compared column's PSI in the drift of each
 * pipeline's latest run that ended, read from its manifest when scraped (a run without a baseline
 * has no series). Labelled by pipeline, never by run: the series stay as few as the pipelines'
 * columns. A finished run's drift is read once (kept while it is its pipeline's latest). While
 * Redis or the storage does not answer, the gauge is left out of the scrape, which still answers.
 */
export function collectRunDrift(registry: Registry, sources: DriftSources, log?: Logger): void {
  /** A finished run's drift (null: none), by run id and end. */
  let known = new Map<string, Drift | null>();
  const latestDrift = async (pipeline: string, seen: Map<string, Drift | null>) => {
    const latest = (await sources.runs.list({ pipeline, limit: LATEST_RUNS })).find((r) => isSettled(r.state));
    if (!latest) return null;
    const key = `${latest.runId}@${latest.finishedAt ?? ''}`;
    let drift = known.get(key);
    if (drift === undefined) {
      const manifest = await readManifest(sources.storage, parseLocation(latest.folder));
      drift = manifest?.drift ?? null;
    }
    seen.set(key, drift);
    return drift;
  };
  new Gauge({
    name: 'batch_scorer_drift_psi',
    help: "PSI of each compared column (of: prediction, confidence, input) in the drift of each pipeline's latest run that ended, from its baseline run.",
    labelNames: ['pipeline', 'column', 'of'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const seen = new Map<string, Drift | null>();
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), READ_TIMEOUT_MS)));
      const read = Promise.all(sources.pipelines.map(async (pipeline) => ({ pipeline, drift: await latestDrift(pipeline, seen) }))).catch((err: unknown) => {
        log?.warn({ err }, "could not read the drift of the pipelines' latest runs; left out of this scrape");
        return undefined;
      });
      const all = await Promise.race([read, timeout]).finally(() => clearTimeout(timer));
      if (!all) return;
      known = seen;
      for (const { pipeline, drift } of all) for (const c of drift?.columns ?? []) this.set({ pipeline, column: c.column, of: c.of }, c.psi);
    },
  });
}
