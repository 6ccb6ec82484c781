import { GenericContainer, getContainerRuntimeClient, type StartedTestContainer } from 'testcontainers';

/**
 * Redis for the queue tests: REDIS_URL when set; else a testcontainers Redis where a container
 * runtime answers; else the local Redis at 127.0.0.1:6379 (which `.ci/run` starts). Worker
 * threads and child processes inherit REDIS_URL from here.
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (process.env.REDIS_URL) return undefined;
  try {
    await getContainerRuntimeClient();
  } catch {
    return undefined;
  }
  const redis: StartedTestContainer = await new GenericContainer('redis:7-alpine')
    .withCommand(['redis-server', '--maxmemory-policy', 'noeviction', '--save', '', '--appendonly', 'no'])
    .withExposedPorts(6379)
    .start();
  process.env.REDIS_URL = `redis://${redis.getHost()}:${redis.getMappedPort(6379)}`;
  return async () => {
    await redis.stop();
  };
}
