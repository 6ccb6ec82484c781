import { pino, type Logger, type LoggerOptions } from 'pino';
import { envLogLevel, PROCESS_DEFAULTS } from './process-defaults.js';
import { excerpt, excerptStack, MESSAGE_BYTES } from './text-excerpt.js';

export type { Logger };

/**
 * Paths pino blanks out wherever they appear, so that a token or credential handed to a logger by
 * mistake never reaches the output.
 */
const REDACT_PATHS = [
  'token',
  '*.token',
  'apiToken',
  '*.apiToken',
  'password',
  '*.password',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'headers["proxy-authorization"]',
  '*.headers["proxy-authorization"]',
  'headers.cookie',
  '*.headers.cookie',
  'serviceToken',
  '*.serviceToken',
  'serviceTokens',
  '*.serviceTokens',
  'secretAccessKey',
  '*.secretAccessKey',
  'credentials',
  '*.credentials',
];

/**
 * The one logger of a process, JSON lines on stderr (stdout stays free for `--json` summaries and
 * data). Children carry run, segment and job ids.
 */
export function createLogger(options: { level?: string; name?: string } = {}): Logger {
  const config: LoggerOptions = {
    name: options.name ?? 'batch-scorer',
    level: options.level ?? envLogLevel() ?? PROCESS_DEFAULTS.logLevel,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    serializers: { err: boundedErr },
    base: { pid: process.pid },
  };
  return pino(config, pino.destination({ fd: 2, sync: false }));
}

/**
 * pino's error serializer, with the message and stack bounded (see text-excerpt.ts): an error
 * quoting a 50 MB line must not make a 50 MB log line. pino joins the messages and stacks of the
 * error's causes into these two fields, so the causes are bounded too.
 */
function boundedErr(err: unknown): unknown {
  const shown = pino.stdSerializers.err(err as Error) as unknown;
  if (typeof shown !== 'object' || shown === null) return typeof shown === 'string' ? excerpt(shown, MESSAGE_BYTES) : shown;
  const fields = shown as { message?: unknown; stack?: unknown };
  if (typeof fields.message === 'string') fields.message = excerpt(fields.message, MESSAGE_BYTES);
  if (typeof fields.stack === 'string') fields.stack = excerptStack(fields.stack);
  return shown;
}

/**
 * A request path as it may be logged: without its query string (`/runs?…`), since a value there,
 * or even a bare parameter, may be a token (`?token=...`); a path of many KiB is cut to VALUE_BYTES.
 */
export function redactPath(url: string): string {
  const at = url.indexOf('?');
  return excerpt(at < 0 ? url : `${url.slice(0, at)}?…`);
}

/** A logger that drops everything: for library callers and tests that pass none. */
export const silentLogger: Logger = pino({ level: 'silent' });

/**
 * A URL as it may be shown: without password, query string or fragment (they can hold secrets).
 * The user name goes too, unless `keepUser`: then it stays and a password shows as `***`
 * (`redis://user:***@host:6379`), which tells which account was used without telling its secret.
 */
export function redactUrl(url: string, options: { keepUser?: boolean } = {}): string {
  try {
    const u = new URL(url);
    if (!options.keepUser) u.username = '';
    u.password = options.keepUser && u.password ? '***' : '';
    u.search = '';
    u.hash = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return '[unparseable url]';
  }
}
