import { BatchScorerError } from '../errors.js';
import type { NotifySettings } from '../config/index.js';
import { runEvents, type NotifyEvent } from './notify-events.js';
import type { PipelineNotify } from './pipeline-notify.js';
import type { RunEnd } from './run-end.js';
import { targetName } from './target-name.js';

/** Who hears which run ends, and how deliveries are signed and linked. */
export interface NotifyConfig {
  secret: string;
  /** NOTIFY_URLS: every run's end. */
  everyEnd: readonly string[];
  /** Each pipeline's `notify`, by pipeline name: the ends of its runs, for the events of `on`. */
  pipelines: ReadonlyMap<string, PipelineNotify>;
  /** Every target above by its name (see targetName): what a delivery job may name. */
  targets: ReadonlyMap<string, string>;
  publicUrl?: string;
}

/**
 * The config of a process that tells run ends, or undefined when nothing is to be told. A
 * pipeline declaring targets needs NOTIFY_SECRET as NOTIFY_URLS does (E_CONFIG, naming it).
 */
export function notifyConfig(settings: NotifySettings, pipelines: readonly { name: string; notify?: PipelineNotify }[] = []): NotifyConfig | undefined {
  const declared = new Map(pipelines.flatMap((p) => (p.notify ? [[p.name, p.notify] as const] : [])));
  if (settings.urls.length === 0 && declared.size === 0) return undefined;
  if (!settings.secret) {
    const first = [...declared.keys()][0];
    throw new BatchScorerError('E_CONFIG', `pipeline ${first} declares notify targets but NOTIFY_SECRET is not set: every delivery is signed with it; set it`);
  }
  const urls = [...settings.urls, ...[...declared.values()].flatMap((p) => p.urls)];
  const targets = new Map(urls.map((url) => [targetName(url), url]));
  return { secret: settings.secret, everyEnd: settings.urls, pipelines: declared, targets, ...(settings.publicUrl && { publicUrl: settings.publicUrl }) };
}

/**
 * The targets told of one run end, each once: NOTIFY_URLS, then those of the run's pipeline
 * whose `on` names one of the end's events.
 */
export function targetsOf(end: Pick<RunEnd, 'state' | 'drift' | 'pipeline'>, config: NotifyConfig): string[] {
  const events: NotifyEvent[] = runEvents(end);
  const own = end.pipeline === null ? undefined : config.pipelines.get(end.pipeline);
  const wanted = own && events.some((e) => own.on.includes(e)) ? own.urls : [];
  return [...new Set([...config.everyEnd, ...wanted])];
}
