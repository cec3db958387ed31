import { connect } from 'node:net';

/** Whether something accepts connections on the loopback port: a running `npm start`'s store, for the CLIs. */
export function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
