import { inputKind, type Location, parseLocation } from '../storage/index.js';

/** A dataset as OpenLineage names it: the datasource, and the dataset within it. */
export interface DatasetName {
  namespace: string;
  name: string;
}

/**
 * A file's dataset, per OpenLineage's naming spec: an S3 object is namespace `s3://<bucket>`,
 * name its key; a local file is namespace `file`, name its absolute path. Undefined for a folder
 * named with its trailing '/' or a glob (their files are datasets once listed), and for text that
 * is no location (a request refused before it was checked).
 */
export function datasetName(location: string): DatasetName | undefined {
  let loc: Location;
  try {
    loc = parseLocation(location);
  } catch {
    return undefined;
  }
  // A local folder's trailing '/' is gone once parsed: the text still says it.
  if (location.endsWith('/') || inputKind(loc) !== 'file') return undefined;
  return loc.kind === 's3' ? { namespace: `s3://${loc.bucket}`, name: loc.key } : { namespace: 'file', name: loc.path };
}
