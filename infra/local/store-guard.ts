import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { readBoundedBody } from './request-body';
import { signatureOf, signedWith, type StoreCredential } from './signed-request';

export type { StoreCredential } from './signed-request';

/** dynalite's own limit on a request's body, kept here since the body is read here first. */
const MAX_REQUEST_BYTES = 16 * 1024 * 1024;

/**
 * Puts a check in front of dynalite's request handler, in the same server. dynalite answers any
 * request, with `Access-Control-Allow-Origin: *` to browsers: a web page, or another user of the
 * machine, could read every account's secret and insert a working API key.
 * - A request that carries an `Origin` header comes from a browser: refused, preflights included.
 * - With a credential, a request must be signed with it (AWS Signature V4, as the SDK signs with its
 *   secret access key): its signature is checked over the body, which is then handed to dynalite.
 *   One without a signature of that form is refused before any of its body is read, and a body is
 *   read no further than its bound. The secret itself never travels; the access key id is not checked (`aws` CLI users may pick any).
 */
export function guardStore(server: Server, credential: StoreCredential | undefined): void {
  const serve = server.listeners('request')[0] as RequestListener;
  server.removeAllListeners('request');
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (request.headers.origin !== undefined) return refuse(response, 403, 'this store does not serve browsers (the request has an Origin header)');
    if (!credential) return serve(request, response);
    const unsigned = `this store serves only requests signed with the credential in ${credential.file}`;
    // Before any of the body is read: only a request signed the way the SDK signs may make the store read one.
    const signature = signatureOf(request);
    if (!signature) return refuse(response, 403, unsigned);
    readBoundedBody(request, MAX_REQUEST_BYTES, 'stop')
      .then((body) => {
        if (body === undefined) return refuse(response, 413, `a request body is at most ${MAX_REQUEST_BYTES} bytes`);
        if (!signedWith(credential.secret, signature, request, body)) return refuse(response, 403, unsigned);
        // dynalite reads the body from the request's stream: it gets a stream of the body already read.
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
