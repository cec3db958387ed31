/**
 * Which of the stack's functions the running work belongs to: a route's `operationId`, or one of the
 * background functions below. It is carried through the work's async calls, so that the tests can
 * hold every AWS call a function makes against that function's grant in the synthesized template
 * (test/support/aws-calls.ts); nothing in production reads it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** The background functions, by the name the stack gives them (a chain's are suffixed with its id). */
export const BACKGROUND_FUNCTIONS = {
  authorizer: 'authorizer',
  maintainAddresses: 'maintainAddresses',
  dispatchDeliveries: 'dispatchDeliveries',
  sweepDeliveries: 'sweepDeliveries',
  followChain: 'followChain',
  quarantinedBlocks: 'quarantinedBlocks',
  runBackfills: 'runBackfills',
} as const;

/** The name of a chain's function of `kind` in the stack. */
export const chainFunctionName = (kind: 'followChain' | 'quarantinedBlocks' | 'runBackfills', chainId: string) => `${BACKGROUND_FUNCTIONS[kind]}${chainId}`;

const running = new AsyncLocalStorage<string>();

/** `work` run as the function `name`: every call it makes, awaited or not, is that function's. */
export function asEntryPoint<T>(name: string, work: () => T): T {
  return running.run(name, work);
}

/** A Lambda handler that runs as the function `name`. */
export function entryPoint<A extends unknown[], R>(name: string, handler: (...args: A) => R): (...args: A) => R {
  return (...args) => running.run(name, () => handler(...args));
}

/** The function whose work is running, if any. */
export const runningEntryPoint = (): string | undefined => running.getStore();
