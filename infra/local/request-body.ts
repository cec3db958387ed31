import type { IncomingMessage } from 'node:http';

/**
 * What becomes of the rest of a body over the bound. 'drain': it is read and dropped, so that a
 * sender still sending gets the answer on its connection. 'stop': no more of it is read; the answer
 * must then close the connection (`Connection: close`), or the sender waits on a paused request.
 */
export type RestOfBody = 'drain' | 'stop';

/**
 * A request's body, or undefined when it is over `maxBytes`: known from Content-Length before any
 * of it is read, else as soon as the bytes read pass the bound; none of it is kept then.
 * Stream events rather than `for await`: the async iterator costs a promise or two per chunk.
 */
export function readBoundedBody(request: IncomingMessage, maxBytes: number, rest: RestOfBody): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const keep = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) chunks.push(chunk);
      else tooLarge();
    };
    const end = () => resolve(Buffer.concat(chunks, size));
    const tooLarge = () => {
      request.removeListener('data', keep).removeListener('end', end);
      chunks.length = 0;
      if (rest === 'drain') request.resume();
      else request.pause();
      resolve(undefined);
    };
    request.once('error', reject);
    if (Number(request.headers['content-length']) > maxBytes) return tooLarge();
    request.on('data', keep).once('end', end);
  });
}
