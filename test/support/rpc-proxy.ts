import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RpcCall {
  id: number | string;
  method: string;
  params: unknown[];
}

export interface RpcResponse {
  jsonrpc: '2.0';
  id: number | string;
  result?: unknown;
  error?: { code: number; message: string };
}

export interface RpcProxyOptions {
  /**
   * What to do with an HTTP request before its calls are forwarded (`path` tells the clients apart):
   * forward it, answer it with an HTTP status, or close its connection without an answer.
   */
  onRequest?: (path: string) => Promise<'forward' | 'destroy' | number> | 'forward' | 'destroy' | number;
  /** Each call's answer: the node's (given), or another one (null, an error). */
  answer?: (call: RpcCall, fromNode: RpcResponse) => Promise<RpcResponse> | RpcResponse;
}

export interface RpcProxy {
  url: string;
  close: () => Promise<void>;
}

/**
 * A JSON-RPC proxy on loopback in front of a node (batches included): the faults of a real chain's
 * RPC (a load balancer's 5xx, a node behind) that anvil itself never makes.
 */
export async function startRpcProxy(upstream: string, options: RpcProxyOptions = {}): Promise<RpcProxy> {
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const decision = (await options.onRequest?.(request.url ?? '/')) ?? 'forward';
    if (decision === 'destroy') return void request.socket.destroy();
    if (typeof decision === 'number') {
      response.writeHead(decision, { 'content-type': 'text/plain' });
      return void response.end('upstream unavailable');
    }
    const body = Buffer.concat(chunks).toString();
    const fromNode = (await (await fetch(upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).json()) as RpcResponse | RpcResponse[];
    const calls = JSON.parse(body) as RpcCall | RpcCall[];
    const answer = (call: RpcCall, given: RpcResponse) => options.answer?.(call, given) ?? given;
    const answered = Array.isArray(calls)
      ? await Promise.all(calls.map((call) => answer(call, (fromNode as RpcResponse[]).find((one) => one.id === call.id)!)))
      : await answer(calls, fromNode as RpcResponse);
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify(answered));
  };
  const server = createServer((request, response) => {
    handle(request, response).catch(() => request.socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
