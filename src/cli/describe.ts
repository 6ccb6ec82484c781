import type { Command } from 'commander';
import { answerBounds } from '../app/index.js';
import { checkService, loadSettings, parseRunOptions, tokenFor } from '../config/index.js';
import { createLogger } from '../log.js';
import { parseModelRef, ServiceClient } from '../service/index.js';
import { action } from './action.js';

export function registerDescribe(program: Command): void {
  program
    .command('describe')
    .description('print the model description (describe {} and {"attribute": "info"})')
    .requiredOption('--model <project/model[.version]>', 'the model, e.g. mindsdb/home_rentals_model')
    .option('--service <url>', 'Model Query Service base URL (env MODEL_SERVICE_URL)')
    .option('--attribute <name>', 'ask one attribute only (info, features, model)')
    .option('--timeout <ms>', 'time limit per request', (v) => Number(v))
    .action(
      action(async (flags: { model: string; service?: string; attribute?: string; timeout?: number }) => {
        const settings = loadSettings();
        const options = parseRunOptions(
          { ...settings.runDefaults, ...(flags.service ? { service: flags.service } : {}), ...(flags.timeout ? { timeout: flags.timeout } : {}) },
          'describe',
          'flags',
        );
        checkService(settings.policy, options.service);
        const client = new ServiceClient({
          baseUrl: options.service,
          token: tokenFor(settings.serviceTokens, options.service),
          timeoutMs: options.timeout,
          answers: answerBounds(settings.limits),
          logger: createLogger({ level: settings.logLevel }),
        });
        try {
          const ref = parseModelRef(flags.model);
          const bodies = flags.attribute ? [{ attribute: flags.attribute }] : [{}, { attribute: 'info' }];
          const answers = [];
          for (const body of bodies) answers.push({ request: body, response: await client.describe(ref, body, { firstContact: answers.length === 0 }) });
          process.stdout.write(`${JSON.stringify(answers, null, 2)}\n`);
        } finally {
          await client.close();
        }
      }),
    );
}
