import { InvalidArgumentError } from 'commander';
import { isTcpPort } from '../config/index.js';

/** A commander parser for a flag taking a whole number of at least `min` (1 by default). */
export const count =
  (flag: string, min = 1) =>
  (v: string) => {
    if (!/^\d+$/.test(v) || Number(v) < min) throw new InvalidArgumentError(`${flag} takes a whole number of at least ${min}, got "${v}"`);
    return Number(v);
  };

/** A commander parser for a flag taking a TCP port (1 to 65535). */
export const tcpPort = (flag: string) => (v: string) => {
  if (!isTcpPort(v)) throw new InvalidArgumentError(`${flag} takes a port from 1 to 65535, got "${v}"`);
  return Number(v);
};

/** A commander parser for a flag taking a number above 0 and at most `max` (fractions allowed: `--interval 0.5`). */
export const positiveNumber = (flag: string, max: number) => (v: string) => {
  if (!/^\d+(\.\d+)?$/.test(v) || Number(v) <= 0 || Number(v) > max)
    throw new InvalidArgumentError(`${flag} takes a number above 0 and at most ${max}, got "${v}"`);
  return Number(v);
};
