/**
 * A reason `npm start` (or the keys CLI) cannot start that the user can act on: a port in use, a data
 * directory held by another process or corrupted, a bad key file. Reported as one "failed to start"
 * line with this message and no stack trace.
 */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}
