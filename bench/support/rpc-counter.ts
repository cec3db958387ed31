import { Agent, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What went through the proxy for one JSON-RPC method since the last reset. */
export interface MethodCounts {
  calls: number;
  /** The longest HTTP round trip of a request that held a call of it, in ms. */
  slowestMs: number;
  /** performance.now() when the last answer holding a call of it ended. */
  lastAnsweredAt: number;
}

export interface CountingRpcProxy {
  url: string;
  /** HTTP requests since the last reset (a JSON-RPC batch is one). */
  httpRequests: () => number;
  methods: () => Map<string, MethodCounts>;
  reset: () => void;
  /** Closes the proxy and every connection to it: requests under way fail. */
  close: () => Promise<void>;
}

/**
 * A JSON-RPC proxy on loopback in front of a node that counts what its clients ask (batches
 * included) and times the answers, passing the node's answers through unparsed. Whatever is
 * compared with it goes through it too, so that its cost is on both sides.
 */
export async function startCountingRpcProxy(upstream: string): Promise<CountingRpcProxy> {
  const target = new URL(upstream);
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  let methods = new Map<string, MethodCounts>();
  let httpRequests = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const parsed = JSON.parse(body.toString()) as { method: string } | { method: string }[];
      const names = (Array.isArray(parsed) ? parsed : [parsed]).map((call) => call.method);
      httpRequests += 1;
      for (const name of names) {
        const counts = methods.get(name) ?? { calls: 0, slowestMs: 0, lastAnsweredAt: 0 };
        counts.calls += 1;
        methods.set(name, counts);
      }
      const started = performance.now();
      const counted = methods;
      const forwarded = httpRequest(
        { host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length } },
        (answer) => {
          response.writeHead(answer.statusCode ?? 502, { 'content-type': answer.headers['content-type'] ?? 'application/json' });
          answer.pipe(response);
          answer.on('end', () => {
            const ended = performance.now();
            // Answers to requests made before a reset count for nothing after it.
            if (counted !== methods) return;
            for (const name of new Set(names)) {
              const counts = methods.get(name)!;
              counts.slowestMs = Math.max(counts.slowestMs, ended - started);
              counts.lastAnsweredAt = Math.max(counts.lastAnsweredAt, ended);
            }
          });
        },
      );
      forwarded.on('error', () => request.socket.destroy());
      forwarded.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    httpRequests: () => httpRequests,
    methods: () => methods,
    reset: () => {
      methods = new Map();
      httpRequests = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        agent.destroy();
        server.close(() => resolve());
      }),
  };
}
