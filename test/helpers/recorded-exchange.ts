import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';

/** Where the exchanges recorded from a real MindsDB live (scripts/record-mindsdb-fixtures.ts writes them). */
export const MINDSDB_FIXTURES = fileURLToPath(new URL('../fixtures/mindsdb/', import.meta.url));

/** A body as recorded: its JSON value when it is JSON, else its text (`text` also for JSON sent as is). */
export type RecordedBody = { json: unknown } | { text: string };

/** A request as it was sent: the headers that matter (content type, accept) and nothing else. */
export interface RecordedRequest {
  method: 'GET' | 'POST' | 'PUT';
  /** Path from the server's root, percent-encoded as sent. */
  path: string;
  headers: Record<string, string>;
  /** Absent: no body at all (no Content-Length either). */
  body?: RecordedBody;
}

/** What the server answered. */
export interface RecordedAnswer {
  status: number;
  /** The Content-Type header as sent (null when there was none). */
  contentType: string | null;
  body: RecordedBody;
}

/** One exchange with a real server, as stored in `test/fixtures/mindsdb/<name>.json`. */
export interface RecordedExchange {
  /** The file's name without `.json`. */
  name: string;
  /** What the exchange shows, in one line. */
  about: string;
  /** The server it was recorded from (`MindsDB 26.0.1`). */
  server: string;
  request: RecordedRequest;
  answer: RecordedAnswer;
}

/** Sends a recorded request to `baseUrl` (no path, e.g. http://127.0.0.1:47334) and reads the answer as a fixture holds it. */
export async function sendRecorded(baseUrl: string, req: RecordedRequest): Promise<RecordedAnswer> {
  const body = req.body === undefined ? undefined : 'json' in req.body ? JSON.stringify(req.body.json) : req.body.text;
  const res = await request(`${baseUrl}${req.path}`, { method: req.method, headers: req.headers, body });
  const text = await res.body.text();
  const contentType = res.headers['content-type'];
  return { status: res.statusCode, contentType: typeof contentType === 'string' ? contentType : null, body: readBody(text) };
}

/** A body's text as a fixture holds it: JSON when it parses, else the text. */
function readBody(text: string): RecordedBody {
  try {
    return { json: JSON.parse(text) as unknown };
  } catch {
    return { text };
  }
}

/** Every recorded exchange, by file name. */
export async function readRecordedExchanges(dir = MINDSDB_FIXTURES): Promise<RecordedExchange[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.json')).sort();
  return Promise.all(files.map(async (f) => JSON.parse(await readFile(join(dir, f), 'utf8')) as RecordedExchange));
}
