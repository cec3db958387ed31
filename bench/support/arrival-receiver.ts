import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Arrival {
  /** performance.now() when the notification's body had arrived. */
  at: number;
  txHash: string;
}

export interface ArrivalReceiver {
  url: string;
  /** The first arrival of each message id. */
  arrivals: Map<string, Arrival>;
  close: () => Promise<void>;
}

/** A receiver on loopback in this process that answers 200 at once and notes when each notification arrived, by message id. */
export async function startArrivalReceiver(): Promise<ArrivalReceiver> {
  const arrivals = new Map<string, Arrival>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const at = performance.now();
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { messageId: string; event: { transaction: { txHash: string } } };
      if (!arrivals.has(body.messageId)) arrivals.set(body.messageId, { at, txHash: body.event.transaction.txHash });
      response.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    arrivals,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
