#!/usr/bin/env node
import { Command } from 'commander';
import { registerDescribe } from './cli/describe.js';
import { registerScore } from './cli/score.js';
import { registerSimulate } from './cli/simulate.js';
import { TOOL } from './version.js';

const program = new Command('batch-scorer')
  .description('Score large CSV / JSON Lines files against a Model Query Service')
  .version(TOOL.version)
  .showHelpAfterError()
  // Usage errors exit 2, as every batch-scorer configuration error does.
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2));

registerScore(program);
registerDescribe(program);
registerSimulate(program);

await program.parseAsync(process.argv);
