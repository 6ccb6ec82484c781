// Preloaded into a child process with `node --import`: records every module the process loads (ES
// modules and require() alike, through module.registerHooks' resolve hook, which runs in the
// process itself) and writes their URLs, one a line, to the file LOADED_MODULES_FILE names as the
// process exits.
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const loaded = new Set();
registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    loaded.add(resolved.url);
    return resolved;
  },
});
process.on('exit', () => writeFileSync(process.env.LOADED_MODULES_FILE, [...loaded].join('\n') + '\n'));
