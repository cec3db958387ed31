import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cp, mkdir, readdir, stat, truncate, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { sideBySide } from '../support/side-by-side';
import { useTempDir } from '../support/temp-dir';
import {
  isRunning,
  logLines,
  npmStartNodeArgs,
  procStat,
  runScript,
  startServerProcess,
  waitUntilGone,
  type RunningServer,
} from '../support/processes';

// A start costs some 5 s of CPU, so servers serve several tests, each made on first use: any test
// still runs alone, in any order. One, with two gateway processes, serves the tests that only look
// at it running, then, stopped with SIGTERM, those that only read the data directory it leaves (or
// damage a copy of it); it is made anew when wanted running after it was stopped. Another is killed
// with SIGKILL for the tests of the kill, and its data directory started again for those of a
// restart: that second server's stop with SIGTERM is the clean stop's test.
interface SharedServer {
  dataDir: string;
  server: Promise<RunningServer>;
  stopped?: Promise<unknown>;
}
let shared: SharedServer | undefined;

function startSharedServer(): SharedServer {
  const dataDir = freshDataDir();
  return (shared = { dataDir, server: startServerProcess({ DATA_DIR: dataDir, GATEWAY_PROCESSES: '2' }) });
}

/** The shared server, running, and its data directory; no test stops or changes either. */
async function sharedRunningServer(): Promise<{ server: RunningServer; dataDir: string }> {
  const current = shared && !shared.stopped ? shared : startSharedServer();
  return { server: await current.server, dataDir: current.dataDir };
}

/** The data directory of the shared server, stopped with SIGTERM; no test changes it. */
async function sharedStoppedDataDir(): Promise<string> {
  const current = shared ?? startSharedServer();
  current.stopped ??= current.server.then((server) => server.stop('SIGTERM'));
  await current.stopped;
  return current.dataDir;
}

// Declared before the temporary directory's: hooks run in the order declared, so the server stops before its directory goes.
afterAll(async () => {
  await (await shared?.server.catch(() => undefined))?.stop('SIGTERM');
});

/** A server that made the dev account's shared secret, then was killed with SIGKILL; no test changes its data directory. */
let killed: Promise<{ server: RunningServer; dataDir: string; key: string; secret: string }> | undefined;
function killedServer() {
  killed ??= (async () => {
    const dataDir = freshDataDir();
    const server = await startServerProcess({ DATA_DIR: dataDir });
    try {
      const key = readFileSync(path.join(dataDir, 'dev-api-key'), 'utf8').trim();
      const made = await fetch(`${server.url}/v1/webhooks:generateOrRotateSharedSecret`, { method: 'POST', headers: { 'x-service-api-key': key } });
      return { server, dataDir, key, secret: ((await made.json()) as { secret: string }).secret };
    } finally {
      await server.stop('SIGKILL');
    }
  })();
  return killed;
}

/**
 * The killed server's data directory started again once its store has stopped, asked for the shared
 * secret, then stopped with SIGTERM: the answer, the server, its exit code and the data directory it
 * leaves, which no test changes.
 */
let restarted: Promise<{ answer: unknown; server: RunningServer; exitCode: number | null; dataDir: string }> | undefined;
function restartedAfterKill() {
  restarted ??= (async () => {
    const { server: killedOne, dataDir, key } = await killedServer();
    await waitUntilGone(childPids(killedOne).store);
    const server = await startServerProcess({ DATA_DIR: dataDir });
    const answer = await fetch(`${server.url}/v1/webhooks:getSharedSecret`, { headers: { 'x-service-api-key': key } })
      .then((response) => response.json() as Promise<unknown>)
      .catch((error: unknown) => ({ failed: String(error) }));
    return { answer, server, exitCode: await server.stop('SIGTERM'), dataDir };
  })();
  return restarted;
}

// A guard against a hang, not a bound: a kill, a restart and a stop take some 9 s on an idle machine,
// and over three times as long while the other half of the suite runs beside this file.
jest.setTimeout(90_000);

const dataDirs = useTempDir('webhooks-supervision-');
let runs = 0;
/** A data directory of its own for each server, so that no test holds another's. */
const freshDataDir = () => path.join(dataDirs(), `data-${(runs += 1)}`);

/** A copy of a stopped server's data directory, for a test to damage. */
async function copyOfDataDir(dataDir: string): Promise<string> {
  const copy = freshDataDir();
  await cp(dataDir, copy, { recursive: true });
  return copy;
}

/** The pids of the embedded DynamoDB's process, the gateway's processes and the background work's, from the "started" log line. */
function childPids(server: RunningServer): { store: number; background: number; gateway: number; all: number[] } {
  const started = logLines(server.output()).find((line) => line.message === 'started')!;
  const [store, background, gateways] = [started.dynamoDbPid as number, started.backgroundPid as number, started.gatewayPids as number[]];
  return { store, background, gateway: gateways[0]!, all: [store, background, ...gateways] };
}

/** `npm start` run to its end, for starts that must fail: its exit code and output. */
function failedStart(env: Record<string, string>) {
  return runScript('infra/local/start.ts', [], { PORT: '0', DYNAMODB_PORT: '0', DEV_CHAIN_PORT: '0', ...env }, npmStartNodeArgs());
}

/** The one structured "failed to start" line, and no stack trace or raw dynalite error anywhere. */
function failureReason(result: { code: number | null; stdout: string; stderr: string }): string {
  expect(result.code).toBe(1);
  const output = `${result.stdout}\n${result.stderr}`;
  const failures = logLines(output).filter((line) => line.message === 'failed to start');
  expect(failures).toHaveLength(1);
  expect(output).not.toMatch(/\n\s+at |Database is closed/);
  return failures[0]!.reason as string;
}

describe('npm start runs the embedded DynamoDB, the gateway and the background work in processes of their own', () => {
  it('listens on 127.0.0.1 by default, the store, two gateway processes and the background work in processes of their own, its children', async () => {
    const { server } = await sharedRunningServer();
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const port = Number(new URL(server.url).port);
    expect(listeningAddresses(port)).toEqual(['127.0.0.1']);
    const { all } = childPids(server);
    expect(new Set([server.process.pid, ...all]).size).toBe(5);
    for (const pid of all) {
      expect(isRunning(pid)).toBe(true);
      expect(procStat(pid)!.parentPid).toBe(server.process.pid);
    }
    expect((await fetch(`${server.url}/v1/webhooks`)).status).toBe(401);
  });

  it.each(['SIGINT', 'SIGTERM'] as const)('stops all its processes cleanly on %s, leaving no orphan', async (signal) => {
    let server: RunningServer;
    let exitCode: number | null;
    if (signal === 'SIGTERM') ({ server, exitCode } = await restartedAfterKill());
    else {
      server = await startServerProcess({ DATA_DIR: freshDataDir() });
      // Ctrl-C in a terminal signals the whole process group (the store has a group of its own, and
      // gets it too); a SIGTERM usually reaches only the parent.
      for (const pid of childPids(server).all) process.kill(pid, 'SIGINT');
      exitCode = await server.stop(signal);
    }
    expect(exitCode).toBe(0);
    for (const pid of childPids(server).all) await waitUntilGone(pid);
    expect(server.output()).toContain('"message":"stopped"');
  });

  it('stops both when SIGTERM is sent to the npm process itself (as `kill $!` after `npm start &` does)', async () => {
    const npm = spawn('npm', ['start'], {
      cwd: path.resolve(__dirname, '../..'),
      env: { ...process.env, PORT: '0', DYNAMODB_PORT: '0', DEV_CHAIN_PORT: '0', DATA_DIR: freshDataDir(), POWERTOOLS_LOG_LEVEL: 'INFO' },
    });
    let output = '';
    const exited = new Promise((resolve) => npm.once('exit', resolve));
    await new Promise<void>((resolve, reject) => {
      npm.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (/"message":"started"/.test(output) && /listening on/.test(output)) resolve();
      });
      void exited.then(() => reject(new Error(`npm start exited before listening:\n${output}`)));
    });
    const started = logLines(output).find((line) => line.message === 'started')!;
    const pid = started.dynamoDbPid as number;
    const serverPid = procStat(pid)!.parentPid;
    npm.kill('SIGTERM');
    await exited;
    await waitUntilGone(serverPid);
    await waitUntilGone(pid);
  });

  it('stops the store, the gateway and the background work when npm start is killed with SIGKILL', async () => {
    const { server } = await killedServer();
    for (const pid of childPids(server).all) await waitUntilGone(pid);
  });

  const crashes = [
    ['store', 'the embedded DynamoDB process exited; stopping'],
    ['background', 'the background process exited; stopping'],
    ['gateway', 'a gateway process exited; stopping'],
  ] as const;
  // A server of its own for each crash, on its own data directory and ports: they run side by side.
  const serverAfterCrash = sideBySide(
    crashes.map(([which]) => which),
    async (which) => {
      const server = await startServerProcess({ DATA_DIR: freshDataDir(), GATEWAY_PROCESSES: '2' });
      const pids = childPids(server);
      process.kill(pids[which], 'SIGKILL');
      return { server, pids, exitCode: await server.stop('SIGCONT') }; // stop waits for the exit; SIGCONT changes nothing
    },
  );

  it.each(crashes)('reports a crash of the %s process, stops the others and exits with 1', async (which, message) => {
    const { server, pids, exitCode } = await serverAfterCrash(which);
    expect(exitCode).toBe(1);
    const lines = logLines(server.output());
    expect(lines).toContainEqual(expect.objectContaining({ message, signal: 'SIGKILL' }));
    expect(lines.at(-1)).toMatchObject({ message: 'stopped' });
    for (const pid of pids.all) await waitUntilGone(pid);
  });

  it('keeps what was written before a SIGKILL of npm start', async () => {
    const { secret } = await killedServer();
    expect((await restartedAfterKill()).answer).toEqual({ secret });
  });
});

describe('npm start refuses to start, in one structured line', () => {
  it('when another running server holds the data directory, naming its pid', async () => {
    const { server: running, dataDir } = await sharedRunningServer();
    // The keys CLI, opening the directory itself (nothing on its DYNAMODB_PORT), is told the same; both
    // only try the directory, so they run side by side.
    const [start, cli] = await Promise.all([
      failedStart({ DATA_DIR: dataDir }),
      runScript('infra/keys-cli.ts', ['list', '--account', 'dev'], { DATA_DIR: dataDir, DYNAMODB_PORT: '1' }),
    ]);
    expect(failureReason(start)).toBe(
      `data directory ${path.join(dataDir, 'dynamodb')} is in use by another process (pid ${running.process.pid}, npm start): ` +
        'stop it, or give this one its own DATA_DIR',
    );
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain(`is in use by another process (pid ${running.process.pid}, npm start)`);
    expect(cli.stderr).toContain('If that is your server, set DYNAMODB_PORT to its DynamoDB port');
  });

  it('when the data directory is corrupted, saying what and to move it away', async () => {
    const dataDir = await copyOfDataDir(await sharedStoppedDataDir());
    const store = path.join(dataDir, 'dynamodb');
    for (const file of await readdir(store)) if (file.startsWith('MANIFEST-')) await writeFile(path.join(store, file), 'not a manifest');
    const reason = failureReason(await failedStart({ DATA_DIR: dataDir }));
    expect(reason).toMatch(new RegExp(`^data directory ${escape(store)} is corrupted: Corruption: .+\\. Move it away to start fresh$`));
  });

  it('when a table file is damaged, which only a read finds, saying what and to move it away', async () => {
    // A second start turns the first one's log into a table file.
    const dataDir = await copyOfDataDir((await restartedAfterKill()).dataDir);
    const store = path.join(dataDir, 'dynamodb');
    const tableFiles = (await readdir(store)).filter((file) => file.endsWith('.ldb'));
    expect(tableFiles).not.toHaveLength(0);
    for (const file of tableFiles) await truncate(path.join(store, file), Math.floor((await stat(path.join(store, file))).size / 2));
    const reason = failureReason(await failedStart({ DATA_DIR: dataDir, DEV_CHAIN: 'off' }));
    expect(reason).toMatch(new RegExp(`^data directory ${escape(store)} is corrupted: IO error: .+\\.ldb: .+\\. Move it away to start fresh$`));
  });

  // Each of the starts below fails on its own data directory and ports: they run side by side.
  const pageTokenFiles = [
    ['empty', ''],
    ['too short', 'abcd'],
    ['not hex', 'z'.repeat(64)],
  ] as const;
  const startWithPageTokenFile = sideBySide(
    pageTokenFiles.map(([, content]) => content),
    async (content) => {
      const dataDir = freshDataDir();
      await mkdir(dataDir, { recursive: true });
      const file = path.join(dataDir, 'page-token.key');
      await writeFile(file, content);
      return { file, result: await failedStart({ DATA_DIR: dataDir }) };
    },
  );

  it.each(pageTokenFiles)('when DATA_DIR/page-token.key is %s, naming the file', async (_, content) => {
    const { file, result } = await startWithPageTokenFile(content);
    expect(failureReason(result)).toBe(`${file} must hold at least 32 bytes, hex-encoded: delete it to make a new one (page tokens handed out before stop working)`);
  });

  const unusableSettings: [Record<string, string>, string][] = [
    [{ DELIVERY_RETRY_SCHEDULE: 'abc' }, `DELIVERY_RETRY_SCHEDULE must be comma-separated non-negative seconds (e.g. "10,60,300"), got 'abc'`],
    [{ DELIVERY_RETRY_SCHEDULE: '5,,10' }, `DELIVERY_RETRY_SCHEDULE must be comma-separated non-negative seconds (e.g. "10,60,300"), got '5,,10'`],
    [{ DELIVERY_TIMEOUT_SECONDS: '0' }, 'DELIVERY_TIMEOUT_SECONDS must be a positive number'],
    [{ CHAIN_RPC_URLS: '1=http://127.0.0.1:1' }, 'chain 1 needs a confirmations value: CHAIN_CONFIRMATIONS=1=<blocks>'],
    [{ CHAIN_RPC_URLS: '43114=ftp://x' }, 'CHAIN_RPC_URLS: the URL of chain 43114 must be an http(s) URL'],
    [{ DEV_CHAIN_PORT: 'abc' }, "DEV_CHAIN_PORT must be a port number, got 'abc'"],
    [{ GATEWAY_PROCESSES: '0' }, "GATEWAY_PROCESSES must be a whole number from 1 to 999, got '0'"],
  ];
  const badPageTokenKey = { PAGE_TOKEN_KEY: 'short' };
  const startWithSettings = sideBySide([...unusableSettings.map(([env]) => env), badPageTokenKey], (env) =>
    failedStart({ DATA_DIR: freshDataDir(), ...env }),
  );

  it.each(unusableSettings)('when a setting is not usable (%j), naming it', async (env, expected) => {
    expect(failureReason(await startWithSettings(env))).toBe(expected);
  });

  it('when PAGE_TOKEN_KEY is set and not a key, naming it', async () => {
    const reason = failureReason(await startWithSettings(badPageTokenKey));
    expect(reason).toBe('PAGE_TOKEN_KEY must hold at least 32 bytes, hex-encoded');
  });

  const portVariables = ['PORT', 'DYNAMODB_PORT', 'DEV_CHAIN_PORT'] as const;
  const startWithPortTaken = sideBySide(portVariables, async (variable) => {
    const blocker = await listeningServer();
    try {
      const port = (blocker.address() as { port: number }).port;
      return { port, result: await failedStart({ DATA_DIR: freshDataDir(), [variable]: String(port) }) };
    } finally {
      blocker.close();
    }
  });

  it.each(portVariables)('when %s is taken, naming the variable', async (variable) => {
    const { port, result } = await startWithPortTaken(variable);
    expect(failureReason(result)).toBe(`port ${port} is in use by another process: stop it, or set ${variable} to another port`);
  });
});

describe('the page-token key file', () => {
  it('is written with mode 0600 and no temporary file left beside it', async () => {
    const dataDir = await sharedStoppedDataDir();
    expect((await stat(path.join(dataDir, 'page-token.key'))).mode & 0o777).toBe(0o600);
    expect((await readdir(dataDir)).filter((file) => file.endsWith('.tmp'))).toEqual([]);
  });
});

describe('the first dev API key on a terminal', () => {
  it('is printed once with a curl line, and no key file is written', async () => {
    const dataDir = freshDataDir();
    const output = await runOnTerminalUntil({ DATA_DIR: dataDir }, /curl -s .*pageSize=10'/);
    const key = /^ {2}(whk_[A-Za-z0-9_-]{43})\r?$/m.exec(output)?.[1];
    expect(key).toBeDefined();
    expect(output.split(key!).length - 1).toBe(2); // the key line and the curl line
    await expect(stat(path.join(dataDir, 'dev-api-key'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

/** Runs `npm start` with stdout on a pseudo-terminal (util-linux `script`) until its output matches, then stops it. */
async function runOnTerminalUntil(env: Record<string, string>, pattern: RegExp): Promise<string> {
  const command = [process.execPath, ...npmStartNodeArgs(), '--import', 'tsx', 'infra/local/start.ts'].join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    cwd: path.resolve(__dirname, '../..'),
    env: { ...process.env, PORT: '0', DYNAMODB_PORT: '0', DEV_CHAIN_PORT: '0', POWERTOOLS_LOG_LEVEL: 'INFO', ...env },
  });
  let output = '';
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (pattern.test(output)) resolve();
    });
    void exited.then(() => reject(new Error(`exited before printing ${pattern}:\n${output}`)));
  });
  // The server is the session leader's child: stop it through the started line's store pid's parent.
  const server = logLines(output.replace(/\r/g, '')).find((line) => line.message === 'started');
  const serverPid = procStat(server!.dynamoDbPid as number)!.parentPid;
  process.kill(serverPid, 'SIGTERM');
  await exited;
  return output.replace(/\r/g, '');
}

/** Local addresses a TCP port is listening on, read from the kernel's socket table (no traffic sent). */
function listeningAddresses(port: number): string[] {
  const addresses: string[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').trim().split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      const [hexAddress, hexPort] = local!.split(':');
      if (state !== '0A' || parseInt(hexPort!, 16) !== port) continue; // 0A: LISTEN
      addresses.push(
        hexAddress!.length === 8 ? hexAddress!.match(/../g)!.reverse().map((byte) => parseInt(byte, 16)).join('.') : `ipv6:${hexAddress}`,
      );
    }
  }
  return addresses;
}

function listeningServer(): Promise<Server> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
