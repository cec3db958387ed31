// The local gateway's connections before a request reaches its handler: how many it holds, how long
// a request may take to arrive, and the answers to what Node's HTTP parser refuses.
import { randomUUID } from 'node:crypto';
import { maxHeaderSize, STATUS_CODES, type Server, type ServerOptions } from 'node:http';
import type { Duplex } from 'node:stream';
import type { LocalGatewayBounds } from '../../lib/config/runtime';
import { ApiError, ServiceUnavailable } from '../../lib/errors';
import { errorResponse } from '../../lib/http/responses';
import { logRequest, logsRequests } from './local-logger';

/** Node's timeouts; it looks for late headers and requests every connectionsCheckingInterval (30 s by default). */
export function timeoutOptions(bounds: LocalGatewayBounds): ServerOptions {
  const headersTimeout = bounds.headersTimeoutSeconds * 1000;
  return { headersTimeout, requestTimeout: bounds.requestTimeoutSeconds * 1000, connectionsCheckingInterval: Math.min(1000, headersTimeout / 2) };
}

/** The connection cap and keep-alive time, and the error shape for requests Node's parser refuses. */
export function boundConnections(server: Server, bounds: LocalGatewayBounds): void {
  server.on('clientError', answerClientError);
  capConnections(server, bounds.maxConnections);
  server.keepAliveTimeout = bounds.keepAliveTimeoutSeconds * 1000;
}

/**
 * At most `limit` connections at once; one more is answered 503 as it arrives, before anything of it
 * is read, and closed (a connection closed without an answer leaves Node's fetch waiting). Counted
 * here: server.maxConnections is ignored in a node:cluster worker, as npm start's gateway processes are.
 */
function capConnections(server: Server, limit: number) {
  let open = 0;
  server.on('connection', (socket: Duplex) => {
    if (open >= limit) {
      const refusal = new ServiceUnavailable(1, `The gateway holds its limit of ${limit} connections; retry after the time in the Retry-After header`);
      socket.end(rawErrorResponse(refusal, randomUUID()), () => socket.destroy());
      return;
    }
    open += 1;
    socket.once('close', () => (open -= 1));
  });
}

/**
 * Requests Node's HTTP parser refuses before any handler sees them (headers over its size limit, a
 * malformed request line, a timeout) get the same error shape, x-request-id and log line as any
 * other response, instead of Node's bare status line.
 */
function answerClientError(error: Error & { code?: string }, socket: Duplex) {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const requestId = randomUUID();
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const message =
    status === 431
      ? `The request line and headers are larger than the limit of ${maxHeaderSize} bytes`
      : status === 408
        ? 'The request was not received in time'
        : 'Malformed HTTP request';
  socket.end(rawErrorResponse(new ApiError(status, message), requestId));
  if (logsRequests) logRequest({ status, requestId, parseError: error.code });
}

/** An error response written straight to a socket, in the API's error shape, closing the connection. */
function rawErrorResponse(error: ApiError, requestId: string): string {
  const { statusCode, headers, body } = errorResponse(error);
  const head = [`HTTP/1.1 ${statusCode} ${STATUS_CODES[statusCode]}`, `x-request-id: ${requestId}`, 'Connection: close'];
  for (const name in headers) head.push(`${name}: ${String(headers[name])}`);
  head.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return `${head.join('\r\n')}\r\n\r\n${body}`;
}
