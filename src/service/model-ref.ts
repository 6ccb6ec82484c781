import { UsageError } from '../errors.js';
import { excerpt } from '../text-excerpt.js';

/** A model as users name it: `project/model` or `project/model.version`. */
export interface ModelRef {
  project: string;
  model: string;
  /** The version asked for; undefined means "the active one", resolved from describe at run start. */
  version?: number;
}

/** Parses `project/model[.version]`; a model name may itself hold dots, only a trailing `.N` is a version. */
export function parseModelRef(text: string): ModelRef {
  const slash = text.indexOf('/');
  if (slash <= 0 || slash === text.length - 1 || text.indexOf('/', slash + 1) !== -1) {
    throw new UsageError(`--model "${excerpt(text)}": expected project/model or project/model.version, e.g. mindsdb/home_rentals_model.2`);
  }
  const project = text.slice(0, slash);
  const rest = text.slice(slash + 1);
  const m = /^(.+)\.(\d+)$/.exec(rest);
  return m ? { project, model: m[1], version: Number(m[2]) } : { project, model: rest };
}

/** The model name as the service addresses it: `name.N` when a version is pinned. */
export function modelPathName(ref: ModelRef): string {
  return ref.version === undefined ? ref.model : `${ref.model}.${ref.version}`;
}

export function formatModelRef(ref: ModelRef): string {
  return `${ref.project}/${modelPathName(ref)}`;
}
