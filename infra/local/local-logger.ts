import cluster from 'node:cluster';
import { closeSync, constants, lstatSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import path from 'node:path';
import { Logger, LogLevelThreshold, type LogItem } from '@aws-lambda-powertools/logger';
import { dataDirOf } from './data-dir';

const SERVICE_NAME = 'webhooks-local-gateway';

/**
 * The local gateway's own logger. The handlers' logger carries the Lambda context of the invocation
 * it serves; the gateway runs many invocations at once in one process, so its lines (one per
 * request) must not borrow that context.
 */
export const localLogger = new Logger({ serviceName: SERVICE_NAME });

/** Whether INFO lines (the request lines, the delivery attempts') are written: read once, as the logger's level getter reads the environment on every call. */
export const logsRequests = localLogger.level <= LogLevelThreshold.INFO;

/**
 * A log file of `npm start`'s in DATA_DIR/logs: lines one per request or per delivery attempt, which
 * in the terminal would bury start-up, warnings and errors. Made (and rotated) at the start of the
 * process that writes it, then appended to by that process.
 */
class LocalLogFile {
  constructor(
    private readonly name: string,
    /** What its lines are, as its warnings name them. */
    private readonly lines: string,
  ) {}

  fileOf(dataDir: string): string {
    return path.join(dataDir, 'logs', this.name);
  }

  /**
   * Opens it for appending, made empty unless it is there: it can be followed (`tail -f`) from the
   * start. A symbolic link in its place is refused, not followed: request paths are the callers'
   * text, and DATA_DIR's tightening (data-dir.ts) leaves links alone.
   */
  private open(dataDir: string): number {
    const file = this.fileOf(dataDir);
    // DATA_DIR is private (data-dir.ts): so is what is made in it, whatever the umask.
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    if (lstatSync(path.dirname(file)).isSymbolicLink()) throw new Error(`${path.dirname(file)} is a symbolic link`);
    return openSync(file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  }

  /** At a start: makes the file (see open), a new one if it has grown too large, and returns its path. */
  create(dataDir: string): string {
    const file = this.fileOf(dataDir);
    closeSync(this.open(dataDir));
    if (lstatSync(file).size > LOG_FILE_KEPT_BYTES) {
      renameSync(file, `${file}.1`);
      closeSync(this.open(dataDir));
    }
    return file;
  }

  /**
   * What appends a line to it, each in one write so that processes sharing it never interleave
   * theirs; stdout's writer, with a warning, when it cannot be opened.
   */
  appender(dataDir: string): (line: string) => void {
    const file = this.fileOf(dataDir);
    let descriptor: number;
    try {
      descriptor = this.open(dataDir);
    } catch (error) {
      localLogger.warn(`${this.lines} go to stdout: their log file cannot be opened`, { file, reason: (error as Error).message });
      return toStdout;
    }
    // A write that fails (a full disk, say) must not end the process, which would stop npm start.
    let failed = false;
    return (line) => {
      try {
        writeSync(descriptor, line);
      } catch (error) {
        if (!failed) localLogger.warn(`${this.lines} are dropped: their log file cannot be written`, { file, reason: (error as Error).message });
        failed = true;
      }
    };
  }
}

/** How large a log file may have grown by a start, which then keeps it as `<name>.1` and begins a new one. */
const LOG_FILE_KEPT_BYTES = 64 * 1024 * 1024;

const toStdout = (line: string) => void process.stdout.write(line);

/** One line per request, appended by `npm start`'s gateway processes (made at `npm start`'s start, before they open it). */
export const requestLog = new LocalLogFile('requests.log', 'request lines');
/** One line per delivery attempt, appended by `npm start`'s background process. */
export const deliveryLog = new LocalLogFile('deliveries.log', 'delivery attempt lines');

/**
 * Where this process writes its request lines. `npm start`'s gateway processes (its only node:cluster
 * workers, which inherit its DATA_DIR) append them to the request log file; a gateway in a test's own
 * process writes them to stdout, where the test reads them.
 */
let writeRequestLine: ((line: string) => void) | undefined;
const requestLineWriter = () => (cluster.isWorker ? requestLog.appender(dataDirOf(process.env)) : toStdout);

/** A logger whose lines below WARN are appended by `appendLine` instead of printed; WARN and above are printed as the local logger's. */
class AppendingLogger extends Logger {
  constructor(private readonly appendLine: (line: string) => void) {
    super({ serviceName: SERVICE_NAME });
  }

  protected override printLog(logLevel: number, log: LogItem): void {
    if (logLevel >= LogLevelThreshold.WARN) return super.printLog(logLevel, log);
    log.prepareForPrint();
    this.appendLine(`${JSON.stringify(log.getAttributes(), this.getJsonReplacer())}\n`);
  }
}

let deliveryLogger: Logger | undefined;

/**
 * In `npm start`'s background process, at its start: makes the delivery log file (as start.ts does
 * the request log's) and has the delivery loop's consumer append its lines below WARN there, one
 * per attempt; its warnings (a webhook deactivated) stay on the terminal, and so do its lines when
 * the file cannot be made.
 */
export function logDeliveriesToFile(dataDir: string): void {
  if (!logsRequests) return;
  try {
    deliveryLog.create(dataDir);
  } catch (error) {
    localLogger.warn('delivery attempt lines go to stdout: their log file cannot be made', { file: deliveryLog.fileOf(dataDir), reason: (error as Error).message });
    return;
  }
  deliveryLogger = new AppendingLogger(deliveryLog.appender(dataDir));
}

/** The logger the delivery loop hands its consumer: the local logger, unless logDeliveriesToFile was called. */
export const deliveryAttemptLogger = (): Logger => deliveryLogger ?? localLogger;

/**
 * The one line per request, in the shape of the logger's lines (level, message, timestamp, service,
 * then the fields, and the pid of the gateway process that served it). Written directly, as it is
 * on every request's path: the logger's formatting would cost several times as much as this line.
 * Appended whole in one write, so that the gateway processes' lines never interleave.
 */
export function logRequest(fields: Record<string, unknown>): void {
  (writeRequestLine ??= requestLineWriter())(`${JSON.stringify({ level: 'INFO', message: 'request', timestamp: new Date().toISOString(), service: SERVICE_NAME, ...fields, pid: process.pid })}\n`);
}
