import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { checkedRequest, type StoreCredential } from './signed-request';

export type { StoreCredential } from './signed-request';

/** dynalite's own limit on a request's body, kept here since the body is read here first. */
const MAX_REQUEST_BYTES = 16 * 1024 * 1024;

/**
 * Puts the check of `npm start`'s stand-ins for AWS (signed-request.ts's checkedRequest) in front of
 * dynalite's request handler, in the same server. dynalite answers any request, with
 * `Access-Control-Allow-Origin: *` to browsers: a web page, or another user of the machine, could
 * read every account's secret and insert a working API key. A body checked is handed to dynalite.
 */
export function guardStore(server: Server, credential: StoreCredential | undefined): void {
  const serve = server.listeners('request')[0] as RequestListener;
  server.removeAllListeners('request');
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    checkedRequest(request, { credential, serves: 'store', maxBytes: MAX_REQUEST_BYTES, readBody: false })
      .then((checked) => {
        if ('refusal' in checked) return refuse(response, checked.refusal.status, checked.refusal.message);
        if (!checked.body) return serve(request, response);
        // dynalite reads the body from the request's stream: it gets a stream of the body already read.
        const { body } = checked;
        const replayed = Object.assign(Readable.from(body.length > 0 ? [body] : []), { headers: request.headers, method: request.method, url: request.url });
        serve(replayed as unknown as IncomingMessage, response);
      })
      // Whatever a request holds, it costs that request alone: an error here must never reach the process (the store's exit stops npm start).
      .catch(() => response.destroy());
  });
}

/**
 * In DynamoDB's error shape, so that the SDK reports the message; a 403 the SDK does not retry. The
 * connection is closed: what is left of a refused request's body is never read.
 */
function refuse(response: ServerResponse, status: number, message: string): void {
  const body = JSON.stringify({ __type: 'com.amazon.coral.service#AccessDeniedException', message });
  response.writeHead(status, { 'content-type': 'application/x-amz-json-1.0', 'content-length': Buffer.byteLength(body), connection: 'close' });
  response.end(body);
}
