/** The commands, for the entry point (src/cli.ts): each command's module is loaded only when it runs (see buildProgram). */
export { reportUsageErrors } from './action.js';
export { buildProgram } from './program.js';
