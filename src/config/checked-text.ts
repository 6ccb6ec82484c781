import { z } from 'zod';
import { UsageError } from '../errors.js';

/**
 * A text field checked by the parser the CLI uses for it (a location, a model name), whose
 * UsageError becomes the field's issue, so a file or request is refused with the CLI's words.
 */
export const checkedText = (parse: (text: string) => unknown) =>
  z.string().superRefine((value, ctx) => {
    try {
      parse(value);
    } catch (err) {
      if (!(err instanceof UsageError)) throw err;
      ctx.addIssue({ code: 'custom', message: err.message });
    }
  });
