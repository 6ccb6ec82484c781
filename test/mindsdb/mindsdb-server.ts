import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, existsSync, openSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, waitFor } from '../helpers/queue.js';

/** The project's own MindsDB environment, made by scripts/mindsdb-env.sh. */
export const MINDSDB_PYTHON = fileURLToPath(new URL('../../.mindsdb/venv/bin/python', import.meta.url));

/** The server's own interfaces beside the predict API: SQL and file upload. */
export interface MindsdbConnection {
  /** Base URL, e.g. http://127.0.0.1:41234 (the client appends /api/projects/...). */
  readonly url: string;
  /** Runs one SQL statement through `POST /api/sql/query`; an `error` answer throws. */
  sql(query: string): Promise<SqlAnswer>;
  /** Uploads a CSV as `files.<name>` (replacing one of that name). */
  uploadFile(name: string, csv: string): Promise<void>;
}

/** A SQL and file connection to a running MindsDB (test files get the URL from the suite's setup). */
export function connectMindsdb(url: string): MindsdbConnection {
  return { url, sql: (query) => runSql(url, query), uploadFile: (name, csv) => uploadFile(url, name, csv) };
}

/** A real MindsDB HTTP API on a loopback port of its own, with its storage in a temp folder. */
export interface MindsdbServer extends MindsdbConnection {
  /** The server's process id, also its process group's (its helper processes are in the group). */
  readonly pid: number;
  /** The server's log so far (for failure messages). */
  log(): Promise<string>;
  /** Stops the server and its helper processes, and removes its storage. Safe twice. */
  close(): Promise<void>;
}

/** A `POST /api/sql/query` answer of type `table` (or `ok`, with no rows). */
export interface SqlAnswer {
  readonly column_names: string[];
  readonly data: unknown[][];
}

/** Rows of a table answer as objects keyed by column name, lower-cased (system tables answer `NAME`, `STATUS`, ...). */
export function sqlRows(answer: SqlAnswer): Record<string, unknown>[] {
  return answer.data.map((row) => Object.fromEntries(answer.column_names.map((c, i) => [c.toLowerCase(), row[i]])));
}

/**
 * Starts MindsDB from the project's virtual environment: `python -m mindsdb --api=http` with a
 * config naming a free loopback port, Bring-Your-Own-Model enabled in 'inhouse' mode (the model
 * file runs inside the server, with the pandas and NumPy it carries), and nothing fetched from
 * outside. Resolves once `GET /api/status` answers 200.
 */
export async function startMindsdb(): Promise<MindsdbServer> {
  if (!existsSync(MINDSDB_PYTHON)) {
    throw new Error(
      `MindsDB is not installed at ${MINDSDB_PYTHON}: run \`bash scripts/mindsdb-env.sh\` first (it makes the project's own virtual environment from PyPI)`,
    );
  }
  const root = await mkdtemp(join(tmpdir(), 'batch-scorer-mindsdb-'));
  const storage = join(root, 'storage');
  await mkdir(storage);
  const port = await freePort();
  const config = join(root, 'config.json');
  await writeFile(config, JSON.stringify({ api: { http: { host: '127.0.0.1', port: String(port) } }, gui: { autoupdate: false, open_on_start: false } }));
  const logPath = join(root, 'mindsdb.log');
  const logFd = openSync(logPath, 'a');
  const child = spawn(MINDSDB_PYTHON, ['-m', 'mindsdb', '--api=http', `--config=${config}`, '--no_studio'], {
    cwd: root,
    detached: true,
    stdio: ['ignore', logFd, logFd],
    env: {
      ...process.env,
      MINDSDB_STORAGE_DIR: storage,
      MINDSDB_BYOM_ENABLED: 'true',
      MINDSDB_BYOM_INHOUSE_ENABLED: 'true',
      MINDSDB_BYOM_DEFAULT_TYPE: 'inhouse',
      MINDSDB_COMMUNITY_HANDLERS: 'false',
      // The server's own telemetry and update checks reach outside this machine.
      CHECK_FOR_UPDATES: '0',
      MINDSDB_TELEMETRY_ENABLED: 'false',
    },
  });
  closeSync(logFd);
  const exited = once(child, 'exit');
  const url = `http://127.0.0.1:${port}`;
  const log = () => readFile(logPath, 'utf8').catch(() => '');
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await stopGroup(child, exited);
    await rm(root, { recursive: true, force: true });
  };
  try {
    await waitUntilAnswering(url, exited, log);
  } catch (err) {
    await close();
    throw err;
  }
  return { ...connectMindsdb(url), pid: child.pid!, log, close };
}

async function runSql(url: string, query: string): Promise<SqlAnswer> {
  const res = await fetch(`${url}/api/sql/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
  const body = (await res.json()) as { type?: string; error_message?: string; column_names?: string[]; data?: unknown[][] };
  if (!res.ok || body.type === 'error')
    throw new Error(`MindsDB SQL failed (${res.status}): ${body.error_message ?? JSON.stringify(body).slice(0, 500)}\n  query: ${query}`);
  return { column_names: body.column_names ?? [], data: body.data ?? [] };
}

async function uploadFile(url: string, name: string, csv: string): Promise<void> {
  const form = new FormData();
  form.append('file', new Blob([csv], { type: 'text/csv' }), `${name}.csv`);
  const res = await fetch(`${url}/api/files/${encodeURIComponent(name)}`, { method: 'PUT', body: form });
  if (!res.ok) throw new Error(`MindsDB file upload of ${name} failed (${res.status}): ${(await res.text()).slice(0, 500)}`);
}

async function waitUntilAnswering(url: string, exited: Promise<unknown>, log: () => Promise<string>): Promise<void> {
  let gone = false;
  void exited.then(() => (gone = true));
  const answering = async () => {
    if (gone) throw new Error('MindsDB exited before answering');
    return fetch(`${url}/api/status`).then(
      (r) => r.ok,
      () => false,
    );
  };
  try {
    await waitFor(`MindsDB to answer ${url}/api/status`, answering, 180_000, 250);
  } catch (err) {
    throw new Error(`${(err as Error).message}; its log ends:\n${(await log()).slice(-3000)}`, { cause: err });
  }
}

/** SIGTERM to the server's process group (it runs helper processes), SIGKILL after 15 s. */
async function stopGroup(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, s);
    } catch {
      // The group is already gone.
    }
  };
  signal('SIGTERM');
  const timer = setTimeout(() => signal('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
  signal('SIGKILL');
}
