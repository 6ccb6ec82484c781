/** The bundled Model Query Service simulator (`batch-scorer simulate`, and the tests' server). */
export { simulatorOptionsSchema } from './options.js';
export { createSimulator } from './server.js';
