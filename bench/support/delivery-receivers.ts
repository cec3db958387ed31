import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { ReceiverCommand, ReceiverMessage } from '../processes/delivery-receiver';

const ENTRY = path.join(__dirname, '../processes/delivery-receiver.ts');

export interface DeliveryReceivers {
  /** URLs under the receiver that answers 200 at once, and under the one that never answers. */
  healthyUrl: (path: string) => string;
  deadUrl: (path: string) => string;
  /**
   * A URL on the `origin`-th of the other origins (each its own loopback address) whose first
   * `answered` requests are answered as the healthy receiver's and the rest hang until cut.
   */
  warmThenHangUrl: (origin: number, answered: number, path: string) => string;
  pid: number;
  /** Called with each batch of notifications the healthy receiver got: their message ids and arrival times (machine clock, ms). */
  onArrivals: (listener: (ids: string[], times: number[]) => void) => void;
  /** Drops every connection the dead receiver (and a receiver that hangs) holds, so that the attempts waiting on it end now. */
  cutDeadConnections: () => Promise<number>;
  stop: () => Promise<void>;
}

/** The receivers' process (bench/processes/delivery-receiver.ts), forked through tsx with an IPC channel; `otherOrigins` for warmThenHangUrl. */
export async function startDeliveryReceivers({ otherOrigins = 0 } = {}): Promise<DeliveryReceivers> {
  const child: ChildProcess = fork(ENTRY, [String(otherOrigins)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const listeners: Array<(ids: string[], times: number[]) => void> = [];
  let cutDone: ((sockets: number) => void) | undefined;
  const ports = await new Promise<Extract<ReceiverMessage, { type: 'listening' }>>((resolve, reject) => {
    void exited.then(() => reject(new Error('the delivery receivers exited before listening')));
    child.on('message', (message: ReceiverMessage) => {
      if (message.type === 'listening') resolve(message);
      else if (message.type === 'arrivals') for (const listener of listeners) listener(message.ids, message.times);
      else cutDone?.(message.sockets);
    });
  });
  return {
    healthyUrl: (where) => `http://127.0.0.1:${ports.healthyPort}${where}`,
    deadUrl: (where) => `http://127.0.0.1:${ports.deadPort}${where}`,
    warmThenHangUrl: (origin, answered, where) => {
      const { address, port } = ports.otherOrigins[origin]!;
      return `http://${address}:${port}/warm-then-hang/${answered}${where}`;
    },
    pid: child.pid!,
    onArrivals: (listener) => void listeners.push(listener),
    cutDeadConnections: () =>
      new Promise((resolve) => {
        cutDone = resolve;
        child.send({ type: 'cut' } satisfies ReceiverCommand);
      }),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
