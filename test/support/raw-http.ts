import { connect } from 'node:net';

/** Sends raw bytes to the local server and returns the raw response, for requests fetch cannot make. */
export function rawExchange(baseUrl: string, request: string): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString()));
    socket.once('end', () => resolve(received));
    socket.once('error', reject);
    socket.write(request);
  });
}
