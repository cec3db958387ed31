import { existsSync, lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createRequestLog, requestLogFileOf } from '../../infra/local/local-logger';
import { useTempDir } from '../support/temp-dir';

const dataDirs = useTempDir('webhooks-request-log-');
let run = 0;
const freshDataDir = () => {
  const dataDir = path.join(dataDirs(), `data-${(run += 1)}`);
  mkdirSync(dataDir, { mode: 0o700 });
  return dataDir;
};

describe("npm start's request log", () => {
  it('is made 0600 in a 0700 logs directory, and kept across starts while small', () => {
    const dataDir = freshDataDir();
    const file = createRequestLog(dataDir);
    expect(file).toBe(requestLogFileOf(dataDir));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    writeFileSync(file, 'a line\n');
    createRequestLog(dataDir);
    expect(readFileSync(file, 'utf8')).toBe('a line\n');
  });

  it('is kept as requests.log.1 by a start that finds it over 64 MiB, and begun anew', () => {
    const dataDir = freshDataDir();
    const file = createRequestLog(dataDir);
    truncateSync(file, 64 * 1024 * 1024 + 1);
    createRequestLog(dataDir);
    expect(statSync(`${file}.1`).size).toBe(64 * 1024 * 1024 + 1);
    expect(statSync(file).size).toBe(0);
  });

  it('refuses a symbolic link in its place instead of writing through it', () => {
    const dataDir = freshDataDir();
    const elsewhere = path.join(dataDirs(), `elsewhere-${run}`);
    writeFileSync(elsewhere, 'not yours\n');
    mkdirSync(path.join(dataDir, 'logs'), { mode: 0o700 });
    symlinkSync(elsewhere, requestLogFileOf(dataDir));
    expect(() => createRequestLog(dataDir)).toThrow();
    expect(readFileSync(elsewhere, 'utf8')).toBe('not yours\n');
    expect(lstatSync(requestLogFileOf(dataDir)).isSymbolicLink()).toBe(true);
  });

  it('refuses a logs directory that is a symbolic link', () => {
    const dataDir = freshDataDir();
    const elsewhere = path.join(dataDirs(), `elsewhere-dir-${run}`);
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, path.join(dataDir, 'logs'));
    expect(() => createRequestLog(dataDir)).toThrow(/symbolic link/);
    expect(existsSync(path.join(elsewhere, 'requests.log'))).toBe(false);
  });
});
