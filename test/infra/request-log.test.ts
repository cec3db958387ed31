import { existsSync, lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { deliveryAttemptLogger, deliveryLog, localLogger, requestLog } from '../../infra/local/local-logger';
import { captureStdout } from '../support/stdout';
import { useTempDir } from '../support/temp-dir';

const dataDirs = useTempDir('webhooks-request-log-');
let run = 0;
const freshDataDir = () => {
  const dataDir = path.join(dataDirs(), `data-${(run += 1)}`);
  mkdirSync(dataDir, { mode: 0o700 });
  return dataDir;
};

describe.each([
  { log: requestLog, name: 'requests.log' },
  { log: deliveryLog, name: 'deliveries.log' },
])("npm start's $name", ({ log, name }) => {
  it('is made 0600 in a 0700 logs directory, and kept across starts while small', () => {
    const dataDir = freshDataDir();
    const file = log.create(dataDir);
    expect(file).toBe(path.join(dataDir, 'logs', name));
    expect(file).toBe(log.fileOf(dataDir));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    writeFileSync(file, 'a line\n');
    log.create(dataDir);
    expect(readFileSync(file, 'utf8')).toBe('a line\n');
  });

  it(`is kept as ${name}.1 by a start that finds it over 64 MiB, and begun anew`, () => {
    const dataDir = freshDataDir();
    const file = log.create(dataDir);
    truncateSync(file, 64 * 1024 * 1024 + 1);
    log.create(dataDir);
    expect(statSync(`${file}.1`).size).toBe(64 * 1024 * 1024 + 1);
    expect(statSync(file).size).toBe(0);
  });

  it('refuses a symbolic link in its place instead of writing through it', () => {
    const dataDir = freshDataDir();
    const elsewhere = path.join(dataDirs(), `elsewhere-${run}`);
    writeFileSync(elsewhere, 'not yours\n');
    mkdirSync(path.join(dataDir, 'logs'), { mode: 0o700 });
    symlinkSync(elsewhere, log.fileOf(dataDir));
    expect(() => log.create(dataDir)).toThrow();
    expect(readFileSync(elsewhere, 'utf8')).toBe('not yours\n');
    expect(lstatSync(log.fileOf(dataDir)).isSymbolicLink()).toBe(true);
  });

  it('refuses a logs directory that is a symbolic link', () => {
    const dataDir = freshDataDir();
    const elsewhere = path.join(dataDirs(), `elsewhere-dir-${run}`);
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, path.join(dataDir, 'logs'));
    expect(() => log.create(dataDir)).toThrow(/symbolic link/);
    expect(existsSync(path.join(elsewhere, name))).toBe(false);
  });

  it('is appended to one line per write; a symbolic link in its place sends the lines to stdout, with a warning', () => {
    const dataDir = freshDataDir();
    const append = log.appender(dataDir);
    append('one\n');
    append('two\n');
    expect(readFileSync(log.fileOf(dataDir), 'utf8')).toBe('one\ntwo\n');

    const linked = freshDataDir();
    const elsewhere = path.join(dataDirs(), `elsewhere-append-${run}`);
    writeFileSync(elsewhere, 'not yours\n');
    mkdirSync(path.join(linked, 'logs'), { mode: 0o700 });
    symlinkSync(elsewhere, log.fileOf(linked));
    const warn = jest.spyOn(localLogger, 'warn').mockImplementation(() => undefined);
    const stdout = captureStdout();
    let warnings: unknown[][];
    try {
      log.appender(linked)('three\n');
    } finally {
      stdout.restore();
      warnings = [...warn.mock.calls];
      warn.mockRestore();
    }
    expect(stdout.text()).toBe('three\n');
    expect(warnings).toEqual([[expect.stringMatching(/go to stdout/), expect.objectContaining({ file: log.fileOf(linked) })]]);
    expect(readFileSync(elsewhere, 'utf8')).toBe('not yours\n');
  });
});

describe("npm start's background process's delivery logger", () => {
  /**
   * local-logger.ts loaded and used at a log level, as in a process started with POWERTOOLS_LOG_LEVEL
   * (the loggers read it on every line, local-logger.ts once at its load).
   */
  function atLevel(level: string, use: (logger: typeof import('../../infra/local/local-logger')) => void): void {
    const given = process.env.POWERTOOLS_LOG_LEVEL;
    process.env.POWERTOOLS_LOG_LEVEL = level;
    try {
      jest.isolateModules(() => use(require('../../infra/local/local-logger')));
    } finally {
      process.env.POWERTOOLS_LOG_LEVEL = given;
    }
  }

  it('appends its lines below WARN (the delivery attempts) to deliveries.log, and prints its warnings', () => {
    const dataDir = freshDataDir();
    const stdout = captureStdout();
    const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    let printed: string;
    try {
      atLevel('DEBUG', (logger) => {
        logger.logDeliveriesToFile(dataDir);
        const log = logger.deliveryAttemptLogger();
        expect(log).not.toBe(logger.localLogger);
        log.info('delivery attempt', { messageId: 'message-1', statusCode: 200 });
        log.debug('delivery put off', { messageId: 'message-2' });
        log.warn('webhook deactivated', { messageId: 'message-3' });
      });
    } finally {
      stdout.restore();
      printed = stderr.mock.calls.map(([chunk]) => String(chunk)).join('');
      stderr.mockRestore();
    }
    const lines = readFileSync(deliveryLog.fileOf(dataDir), 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line));
    expect(lines).toEqual([
      expect.objectContaining({ level: 'INFO', message: 'delivery attempt', messageId: 'message-1', statusCode: 200, service: 'webhooks-local-gateway' }),
      expect.objectContaining({ level: 'DEBUG', message: 'delivery put off', messageId: 'message-2' }),
    ]);
    expect(stdout.text()).toBe('');
    expect(printed).toContain('"message":"webhook deactivated"');
    expect(printed).not.toContain('delivery attempt');
    expect(statSync(deliveryLog.fileOf(dataDir)).mode & 0o777).toBe(0o600);
  });

  it('is the local logger, and makes no file, where INFO lines are not written or logDeliveriesToFile was not called', () => {
    const dataDir = freshDataDir();
    atLevel('WARN', (logger) => {
      logger.logDeliveriesToFile(dataDir);
      expect(logger.deliveryAttemptLogger()).toBe(logger.localLogger);
    });
    expect(existsSync(deliveryLog.fileOf(dataDir))).toBe(false);
    expect(deliveryAttemptLogger()).toBe(localLogger);
  });
});
