import cluster from 'node:cluster';
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
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

/** Makes the request log file, empty, unless it is there: it can be followed (`tail -f`) from the start. */
export function createRequestLog(dataDir: string): string {
  const file = requestLogFileOf(dataDir);
  // DATA_DIR is private (data-dir.ts): so is what is made in it, whatever the umask.
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  closeSync(openSync(file, 'a', 0o600));
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
  try {
    const descriptor = openSync(createRequestLog(dataDir), 'a');
    return (line) => writeSync(descriptor, line);
  } catch (error) {
    localLogger.warn('request lines go to stdout: the request log file cannot be opened', { file: requestLogFileOf(dataDir), reason: (error as Error).message });
    return toStdout;
  }
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
