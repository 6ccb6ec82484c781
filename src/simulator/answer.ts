/**
 * An HTTP answer as a value, so the predict and describe handlers stay pure and the server writes
 * every answer the same way (one serialization, Content-Length set, keep-alive preserved).
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

/** The reference server's handled-error shape. */
export function problem(status: number, title: string, detail: string): Answer {
  return {
    status,
    contentType: 'application/problem+json',
    body: JSON.stringify({ title, detail, timestamp: new Date().toISOString() }),
  };
}

/** The reference server's shape for an uncaught Python exception: 500, class name as title. */
export function uncaught(exception: string, message: string): Answer {
  return {
    status: 500,
    contentType: 'application/problem+json',
    body: JSON.stringify({ title: exception, detail: message, message }),
  };
}

export const notFound: Answer = {
  status: 404,
  contentType: 'application/problem+json',
  body: JSON.stringify({ title: 'Not Found' }),
};
