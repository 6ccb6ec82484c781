import { BatchScorerError } from '../errors.js';

/** Where and how run events go: OPENLINEAGE_URL and the settings beside it (see lineageSettingsFromEnv). */
export interface LineageSettings {
  /** The URL events are POSTed to: OPENLINEAGE_URL joined with OPENLINEAGE_ENDPOINT. */
  endpoint: string;
  /** OPENLINEAGE_NAMESPACE: the namespace of the jobs the events name. */
  namespace: string;
  /** OPENLINEAGE_API_KEY: sent as a bearer token when set; never logged. */
  apiKey?: string;
  /** PUBLIC_URL (see NotifySettings): where `serve` answers the custom facets' schemas, which their `_schemaURL`s name (see facetSchemaUrl). */
  publicUrl?: string;
}

/** The path below OPENLINEAGE_URL events go to unless OPENLINEAGE_ENDPOINT says otherwise, as in OpenLineage's HTTP transport (Marquez's). */
export const DEFAULT_LINEAGE_ENDPOINT = 'api/v1/lineage';
export const DEFAULT_LINEAGE_NAMESPACE = 'batch-scorer';

/**
 * OPENLINEAGE_URL (the lineage server's base URL, as OpenLineage's clients take it: events go to
 * `<url>/<OPENLINEAGE_ENDPOINT>`), OPENLINEAGE_ENDPOINT, OPENLINEAGE_NAMESPACE and
 * OPENLINEAGE_API_KEY; undefined when OPENLINEAGE_URL is unset. Messages never quote the URL: one
 * refused for carrying credentials would show them. `publicUrl` is PUBLIC_URL as read with the
 * notification settings.
 */
export function lineageSettingsFromEnv(env: NodeJS.ProcessEnv, publicUrl?: string): LineageSettings | undefined {
  const text = env.OPENLINEAGE_URL?.trim();
  if (!text) return undefined;
  let base: URL;
  try {
    base = new URL(text);
  } catch {
    throw new BatchScorerError('E_CONFIG', 'OPENLINEAGE_URL is not a URL: write the lineage server as http(s)://host:port, e.g. http://marquez:5000');
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw new BatchScorerError('E_CONFIG', `OPENLINEAGE_URL must be an http(s) URL, not ${base.protocol}//: e.g. http://marquez:5000`);
  }
  if (base.username !== '' || base.password !== '' || base.search !== '' || base.hash !== '') {
    throw new BatchScorerError('E_CONFIG', 'OPENLINEAGE_URL must not carry credentials, a query or a fragment: set OPENLINEAGE_API_KEY for a bearer token');
  }
  const path = (env.OPENLINEAGE_ENDPOINT?.trim() || DEFAULT_LINEAGE_ENDPOINT).replace(/^\/+/, '');
  if (!/^[A-Za-z0-9._~\-/]{1,200}$/.test(path)) {
    throw new BatchScorerError('E_CONFIG', 'OPENLINEAGE_ENDPOINT must be a path such as api/v1/lineage (letters, digits, ".", "_", "~", "-" and "/")');
  }
  const namespace = env.OPENLINEAGE_NAMESPACE?.trim() || DEFAULT_LINEAGE_NAMESPACE;
  if (namespace.length > 200 || /[\s\p{Cc}]/u.test(namespace)) {
    throw new BatchScorerError(
      'E_CONFIG',
      'OPENLINEAGE_NAMESPACE must be at most 200 characters, without spaces or control characters, e.g. batch-scorer-prod',
    );
  }
  const apiKey = env.OPENLINEAGE_API_KEY || undefined;
  return { endpoint: `${base.origin}${base.pathname.replace(/\/+$/, '')}/${path}`, namespace, ...(apiKey && { apiKey }), ...(publicUrl && { publicUrl }) };
}
