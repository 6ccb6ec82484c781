import { z } from 'zod';
import { BatchScorerError } from '../errors.js';

/** A node of a Redis Cluster that a connection starts from; the others are found from it. */
export interface SeedNode {
  host: string;
  port: number;
}

/**
 * Where queue mode's Redis is, read from REDIS_URL: one node (`redis://`, `rediss://`, or what
 * else ioredis takes, such as a socket path), handed to ioredis as written; or a Redis Cluster
 * (`redis-cluster://[user:pass@]host1:port1,host2:port2`, `rediss-cluster://` for TLS), given by
 * some of its nodes, and `shownUrl`, the URL as logs and errors may show it (the password masked).
 */
export type RedisTarget =
  { kind: 'node'; url: string } | { kind: 'cluster'; seeds: SeedNode[]; username?: string; password?: string; tls: boolean; shownUrl: string };

/** The schemes REDIS_URL may have; a URL with another is refused rather than read as one node. */
const SCHEMES = ['redis', 'rediss', 'redis-cluster', 'rediss-cluster'];

/** A Redis URL: `redis` or `rediss`, `-cluster` or not, the credentials and nodes (up to the path), and the rest. */
const REDIS_URL = /^(rediss?)(-cluster)?:\/\/([^/?#]*)(.*)$/i;

const portSchema = z.coerce.number().int().min(1).max(65535);

/**
 * Reads REDIS_URL. Errors are E_CONFIG (exit 2), name REDIS_URL and never repeat the URL, which
 * may hold a password.
 */
export function parseRedisUrl(url: string): RedisTarget {
  const read = readRedisUrl(url);
  if ('problem' in read) throw new BatchScorerError('E_CONFIG', `REDIS_URL: ${read.problem}`);
  return read;
}

/** The config file's `redis.url`: text REDIS_URL may hold, checked when the file is read. */
export const redisUrlSchema = z.string().superRefine((url, ctx) => {
  const read = readRedisUrl(url);
  if ('problem' in read) ctx.addIssue({ code: 'custom', message: read.problem });
});

/** A Redis URL read, or why it cannot work (in words that never repeat the URL). */
function readRedisUrl(url: string): RedisTarget | { problem: string } {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1];
  if (scheme !== undefined && !SCHEMES.includes(scheme.toLowerCase())) {
    return { problem: `the scheme ${scheme}:// is not one of ${SCHEMES.map((s) => `${s}://`).join(', ')}` };
  }
  const parts = REDIS_URL.exec(url);
  if (!parts) return { kind: 'node', url };
  const [, base, cluster, authority, rest] = parts;
  // Credentials end at the last `@`: a password may hold `@` or `,`, the nodes cannot.
  const at = authority.lastIndexOf('@');
  const hosts = authority.slice(at + 1);
  if (!cluster) {
    if (hosts.includes(',')) return { problem: `a ${base}:// URL names one node; for a Redis Cluster write ${base}-cluster://host1:port1,host2:port2` };
    return { kind: 'node', url };
  }
  // A cluster has database 0 only, and no option of the URL's query would be read.
  if (rest !== '' && rest !== '/' && rest !== '/0') {
    return { problem: 'a cluster URL takes no database, path or query after its nodes (a Redis Cluster has database 0 only)' };
  }
  const credentials = at < 0 ? undefined : credentialsOf(authority.slice(0, at));
  if (credentials === null) return { problem: 'the user name or password of the cluster URL is not valid URL text (percent-encode special characters)' };
  if (hosts === '') return { problem: `a cluster URL names some of its nodes: ${base}-cluster://host1:port1,host2:port2` };
  const seeds: SeedNode[] = [];
  for (const [i, text] of hosts.split(',').entries()) {
    const seed = seedOf(text.trim());
    if (!seed) return { problem: `node ${i + 1} of the cluster URL, "${text.trim()}", is not host:port with a port from 1 to 65535` };
    seeds.push(seed);
  }
  const shownUser = credentials ? `${encodeURIComponent(credentials.username)}${credentials.password ? ':***' : ''}@` : '';
  return {
    kind: 'cluster',
    seeds,
    ...(credentials?.username ? { username: credentials.username } : {}),
    ...(credentials?.password ? { password: credentials.password } : {}),
    tls: base.toLowerCase() === 'rediss',
    shownUrl: `${base.toLowerCase()}-cluster://${shownUser}${seeds.map(formatSeed).join(',')}`,
  };
}

/** `user:password` as a URL writes them (percent-encoded), decoded; null when they are not valid URL text. */
function credentialsOf(userinfo: string): { username: string; password: string } | null {
  try {
    const u = new URL(`redis://${userinfo}@h`);
    return { username: decodeURIComponent(u.username), password: decodeURIComponent(u.password) };
  } catch {
    return null;
  }
}

/** `host:port` (an IPv6 host in brackets; the port 6379 when left out) as a seed node, or undefined when it is not one. */
function seedOf(text: string): SeedNode | undefined {
  let u: URL;
  try {
    u = new URL(`redis://${text}`);
  } catch {
    return undefined;
  }
  if (u.username || u.password || u.pathname !== '' || u.search || u.hash || u.hostname === '') return undefined;
  const port = portSchema.safeParse(u.port === '' ? 6379 : u.port);
  return port.success ? { host: u.hostname.replace(/^\[(.*)\]$/, '$1'), port: port.data } : undefined;
}

function formatSeed(s: SeedNode): string {
  return `${s.host.includes(':') ? `[${s.host}]` : s.host}:${s.port}`;
}
