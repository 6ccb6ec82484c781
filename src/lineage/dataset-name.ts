import { parseRunInput } from '../config/index.js';
import { type DatabaseUrl, parseTableName } from '../database/index.js';
import { inputKind, type Location } from '../storage/index.js';

/** A dataset as OpenLineage names it: the datasource, and the dataset within it. */
export interface DatasetName {
  namespace: string;
  name: string;
}

/**
 * A file's dataset, per OpenLineage's naming spec: an S3 object is namespace `s3://<bucket>`,
 * name its key; a local file is namespace `file`, name its absolute path; a PostgreSQL table
 * (`table`, of the database `location` names) is namespace `postgres://<host>:<port>`, name
 * `<database>.<schema>.<table>`. Undefined for a folder named with its trailing '/' or a glob
 * (their files are datasets once listed), a database's query (no one table), and for text that
 * is no location (a request refused before it was checked).
 */
export function datasetName(location: string, table?: string): DatasetName | undefined {
  let loc: Location;
  try {
    const input = parseRunInput(location);
    if (input.kind === 'database') return table === undefined ? undefined : tableDataset(input.database, table);
    loc = input.location;
  } catch {
    return undefined;
  }
  // A local folder's trailing '/' is gone once parsed: the text still says it.
  if (location.endsWith('/') || inputKind(loc) !== 'file') return undefined;
  return loc.kind === 's3' ? { namespace: `s3://${loc.bucket}`, name: loc.key } : { namespace: 'file', name: loc.path };
}

/** A table's dataset: namespace `postgres://host:port`, name `database.schema.table`, as OpenLineage names PostgreSQL tables. */
function tableDataset(db: DatabaseUrl, table: string): DatasetName {
  const { schema, table: name } = parseTableName(table, 'table');
  return { namespace: `postgres://${db.host}:${db.port}`, name: `${db.database}.${schema}.${name}` };
}
