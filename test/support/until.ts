import { inspect } from 'node:util';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Reads `read()` every `everyMs` until `done` holds for what it answers, and answers that; fails after
 * `timeoutMs` naming `what` and the last answer.
 */
export async function until<T>(what: string, timeoutMs: number, read: () => Promise<T>, done: (value: T) => boolean, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}; the last answer: ${inspect(value, { depth: 6, breakLength: Infinity })}`);
    await sleep(everyMs);
  }
}
