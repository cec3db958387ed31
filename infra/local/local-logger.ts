import cluster from 'node:cluster';
import { closeSync, constants, lstatSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import path from 'node:path';
import { Logger, LogLevelThreshold } from '@aws-lambda-powertools/logger';
import { dataDirOf } from './data-dir';

const SERVICE_NAME = 'webhooks-local-gateway';

/**
 * The local gateway's own logger. The handlers' logger carries the Lambda context of the invocation
 * it serves; the gateway runs many invocations at once in one process, so its lines (one per
 * request) must not borrow that context.
 */
export const localLogger = new Logger({ serviceName: SERVICE_NAME });

/** Whether the request lines are written: read once, as the logger's level getter reads the environment on every call. */
export const logsRequests = localLogger.level <= LogLevelThreshold.INFO;

/** Where `npm start` appends the request lines, which in the terminal would bury start-up, warnings and errors. */
export const requestLogFileOf = (dataDir: string) => path.join(dataDir, 'logs', 'requests.log');

/**
 * Opens the request log for appending, made empty unless it is there: it can be followed (`tail -f`)
 * from the start. A symbolic link in its place is refused, not followed: request paths are the
 * callers' text, and DATA_DIR's tightening (data-dir.ts) leaves links alone.
 */
function openRequestLog(dataDir: string): number {
  const file = requestLogFileOf(dataDir);
  // DATA_DIR is private (data-dir.ts): so is what is made in it, whatever the umask.
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  if (lstatSync(path.dirname(file)).isSymbolicLink()) throw new Error(`${path.dirname(file)} is a symbolic link`);
  return openSync(file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
}

/** How large the request log may have grown by a start, which then keeps it as requests.log.1 and begins a new one. */
const REQUEST_LOG_KEPT_BYTES = 64 * 1024 * 1024;

/** At `npm start`'s start: makes the request log file (see openRequestLog), a new one if it has grown too large, and returns its path. */
export function createRequestLog(dataDir: string): string {
  const file = requestLogFileOf(dataDir);
  closeSync(openRequestLog(dataDir));
  if (lstatSync(file).size > REQUEST_LOG_KEPT_BYTES) {
    renameSync(file, `${file}.1`);
    closeSync(openRequestLog(dataDir));
  }
  return file;
}

/**
 * Where this process writes its request lines. `npm start`'s gateway processes (its only node:cluster
 * workers, which inherit its DATA_DIR) append them to the request log file; a gateway in a test's own
 * process writes them to stdout, where the test reads them.
 */
let writeRequestLine: ((line: string) => void) | undefined;
function requestLineWriter(): (line: string) => void {
  const toStdout = (line: string) => void process.stdout.write(line);
  if (!cluster.isWorker) return toStdout;
  const dataDir = dataDirOf(process.env);
  let descriptor: number;
  try {
    descriptor = openRequestLog(dataDir);
  } catch (error) {
    localLogger.warn('request lines go to stdout: the request log file cannot be opened', { file: requestLogFileOf(dataDir), reason: (error as Error).message });
    return toStdout;
  }
  // A write that fails (a full disk, say) must not end the gateway process, which would stop npm start.
  let failed = false;
  return (line) => {
    try {
      writeSync(descriptor, line);
    } catch (error) {
      if (!failed) localLogger.warn('request lines are dropped: the request log file cannot be written', { file: requestLogFileOf(dataDir), reason: (error as Error).message });
      failed = true;
    }
  };
}

/**
 * The one line per request, in the shape of the logger's lines (level, message, timestamp, service,
 * then the fields, and the pid of the gateway process that served it). Written directly, as it is
 * on every request's path: the logger's formatting would cost several times as much as this line.
 * Appended whole in one write, so that the gateway processes' lines never interleave.
 */
export function logRequest(fields: Record<string, unknown>): void {
  (writeRequestLine ??= requestLineWriter())(`${JSON.stringify({ level: 'INFO', message: 'request', timestamp: new Date().toISOString(), service: SERVICE_NAME, ...fields, pid: process.pid })}\n`);
}
