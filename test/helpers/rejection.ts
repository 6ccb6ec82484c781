import { expect } from 'vitest';

/** The error a promise rejects with, checked to be a `type`; fails the test when the promise resolves. */
export async function rejection<E extends Error>(promise: Promise<unknown>, type: abstract new (...args: never[]) => E): Promise<E> {
  const outcome = await promise.then(
    () => ({ resolved: true as const }),
    (error: unknown) => ({ resolved: false as const, error }),
  );
  if (outcome.resolved) throw new Error('expected a rejection, but the promise resolved');
  expect(outcome.error).toBeInstanceOf(type);
  return outcome.error as E;
}

/** The error `fn` throws, checked to be a `type`; fails the test when `fn` returns. */
export function thrown<E extends Error>(fn: () => unknown, type: abstract new (...args: never[]) => E): E {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(type);
    return error as E;
  }
  throw new Error('expected an error, but the call returned');
}
