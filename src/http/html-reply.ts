import type { FastifyReply } from 'fastify';

/** A page of the dashboard as answered: HTML, never cached (its runs move on). */
export function sendHtml(reply: FastifyReply, code: number, body: string): FastifyReply {
  return reply.code(code).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(body);
}
