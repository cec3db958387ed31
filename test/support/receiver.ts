import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  at: number;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * What the receiver answers to its n-th request (0-based): a status (with headers and body), sent
 * `delayMs` after the request arrived (at once unless told), or `hang` to never answer.
 */
export type Answer = { status: number; headers?: Record<string, string>; body?: string; delayMs?: number } | 'hang';

export interface Receiver {
  url: string;
  requests: ReceivedRequest[];
  /** Settles once `count` requests have arrived (or fails the test after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

/**
 * A real HTTP receiver on loopback; answers 200 unless `answer` says otherwise. `host`: another
 * loopback address (`::1`), where receivers must count as different hosts.
 */
export async function startReceiver(answer: (index: number, request: ReceivedRequest) => Answer = () => ({ status: 200 }), host = '127.0.0.1'): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const hanging = new Set<ServerResponse>();
  const delayed = new Set<NodeJS.Timeout>();
  let waiters: Array<() => void> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = { at: Date.now(), method: req.method!, path: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      const index = requests.push(request) - 1;
      for (const wake of waiters) wake();
      const reply = answer(index, request);
      if (reply === 'hang') {
        hanging.add(res);
        return;
      }
      const send = () => res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers }).end(reply.body ?? '{"ok":true}');
      if (!reply.delayMs) {
        send();
        return;
      }
      const timer = setTimeout(() => {
        delayed.delete(timer);
        send();
      }, reply.delayMs);
      delayed.add(timer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/hook`,
    requests,
    waitFor: (count, timeoutMs = 15_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (requests.length < count) return false;
          clearTimeout(timer);
          waiters = waiters.filter((waiter) => waiter !== check);
          resolve(requests.slice(0, count));
          return true;
        };
        const timer = setTimeout(() => reject(new Error(`receiver got ${requests.length} of ${count} requests in ${timeoutMs} ms`)), timeoutMs);
        if (!check()) waiters.push(check);
      }),
    close: async () => {
      for (const timer of delayed) clearTimeout(timer);
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
