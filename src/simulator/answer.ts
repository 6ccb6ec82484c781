/**
 * An HTTP answer as a value, so the predict and describe handlers stay pure and the server writes
 * every answer the same way (one serialization, Content-Length set, keep-alive preserved).
 *
 * The error answers are those of the reference server (MindsDB's HTTP API: Flask, flask-restx and
 * Werkzeug), recorded in test/fixtures/mindsdb and described in docs/real-servers.md.
 */
export interface Answer {
  status: number;
  contentType: string;
  body: string;
  headers?: Record<string, string>;
}

export function jsonAnswer(status: number, value: unknown): Answer {
  return { status, contentType: 'application/json', body: JSON.stringify(value) };
}

/**
 * The reference server's own handled errors (its `http_error`: 401, 404s naming the missing
 * project or model): problem+json with a timestamp.
 */
export function problem(status: number, title: string, detail: string): Answer {
  return {
    status,
    contentType: 'application/problem+json',
    body: JSON.stringify({ title, detail, timestamp: pythonNow() }),
  };
}

/**
 * An error the reference server's API layer (flask-restx) turns into an answer: an HTTP error
 * Werkzeug raised (400, 415, 405) or an uncaught Python exception (500, its class name as title).
 * Served as `application/json` (flask-restx rewrites the problem+json the server asks for), with
 * `message` repeating `detail`.
 */
export function apiError(status: number, title: string, detail: string): Answer {
  return jsonAnswer(status, { title, detail, message: detail });
}

/** An uncaught Python exception: 500, its class name as title and its message as detail. */
export function uncaught(exception: string, message: string): Answer {
  return apiError(500, exception, message);
}

/** A body Werkzeug could not read as JSON (empty, or not JSON), as the reference server answers it. */
export const badRequest: Answer = apiError(400, 'Bad Request', 'The browser (or proxy) sent a request that this server could not understand.');

/** A body not labelled JSON, as the reference server answers it. */
export const unsupportedMediaType: Answer = apiError(
  415,
  'Unsupported Media Type',
  "Did not attempt to load JSON data because the request Content-Type was not 'application/json'.",
);

/** A method an API route does not serve (POST on describe). */
export const methodNotAllowed: Answer = apiError(405, 'Method Not Allowed', 'The method is not allowed for the requested URL.');

/** A GET under `/api/` that no route serves (GET on predict included: the server's catch-all GET route answers it). */
export function apiNotFound(): Answer {
  return problem(404, 'Not found', 'The endpoint you are trying to access does not exist on the server.');
}

/** Werkzeug's own HTML error page, answered for paths outside the API: 404 for a GET, 405 for other methods. */
export function werkzeugPage(status: 404 | 405): Answer {
  const [title, text] =
    status === 404
      ? ['Not Found', 'The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again.']
      : ['Method Not Allowed', 'The method is not allowed for the requested URL.'];
  return {
    status,
    contentType: 'text/html; charset=utf-8',
    body: `<!doctype html>\n<html lang=en>\n<title>${status} ${title}</title>\n<h1>${title}</h1>\n<p>${text}</p>\n`,
  };
}

/** The time as Python's `str(datetime.now())` writes it (local time, microseconds): the reference server's timestamps. */
export function pythonNow(now = new Date()): string {
  const p = (n: number, width = 2) => String(n).padStart(width, '0');
  const date = `${now.getFullYear()}-${p(now.getMonth() + 1)}-${p(now.getDate())}`;
  return `${date} ${p(now.getHours())}:${p(now.getMinutes())}:${p(now.getSeconds())}.${p(now.getMilliseconds(), 3)}000`;
}
