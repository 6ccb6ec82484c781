import type { TestProject } from 'vitest/node';
import { startMindsdb } from './mindsdb-server.js';
import { trainModels } from './models.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Base URL of the suite's MindsDB, its models trained (see models.ts). */
    mindsdbUrl: string;
  }
}

/**
 * One real MindsDB for the whole suite, its models trained before the first test file starts.
 * Where MindsDB is not installed this throws, so the suite fails and says why: it never passes
 * without a server.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startMindsdb();
  try {
    await trainModels(server);
  } catch (err) {
    await server.close();
    throw err;
  }
  project.provide('mindsdbUrl', server.url);
  return () => server.close();
}
