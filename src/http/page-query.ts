import { z } from 'zod';

/** `?page=`: a whole number from 1 to `max`, written plainly (no sign, exponent or leading zero). */
export function pageNumberSchema(max: number) {
  return z
    .string()
    .regex(/^[1-9][0-9]{0,5}$/)
    .transform(Number)
    .pipe(z.number().max(max));
}
