import { chmod, cp, lstat, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { useTempDir } from '../support/temp-dir';
import { requestLog } from '../../infra/local/local-logger';
import { logLines, runScript, startServerProcess } from '../support/processes';

const dataDirs = useTempDir('webhooks-data-dir-private-');

/** Every file and directory under `root` (itself included), relative to it, with its permission bits. */
async function walk(root: string, relative = '.'): Promise<{ entry: string; mode: number; directory: boolean }[]> {
  const stats = await lstat(path.join(root, relative));
  const here = { entry: relative, mode: stats.mode & 0o777, directory: stats.isDirectory() };
  if (!stats.isDirectory()) return [here];
  const names = await readdir(path.join(root, relative));
  return [here, ...(await Promise.all(names.map((name) => walk(root, path.join(relative, name))))).flat()];
}

/** The entries under `root` that are open to anyone but their owner: none, when DATA_DIR is private. */
async function openToOthers(root: string): Promise<string[]> {
  return (await walk(root)).filter(({ mode, directory }) => mode !== (directory ? 0o700 : 0o600)).map(({ entry, mode }) => `${entry} ${mode.toString(8)}`);
}

async function loosen(root: string): Promise<void> {
  for (const { entry, directory } of await walk(root)) await chmod(path.join(root, entry), directory ? 0o755 : 0o644);
}

/**
 * A data directory that npm start made and stopped, to copy: the first test's (a start costs some
 * 5 s of CPU), or one made for the second test when it runs without the first.
 */
let stoppedDataDir: Promise<string> | undefined;
async function madeAndStopped(): Promise<string> {
  const dataDir = path.join(dataDirs(), 'made');
  expect(await (await startServerProcess({ DATA_DIR: dataDir, DEV_CHAIN: 'off' })).stop('SIGTERM')).toBe(0);
  return dataDir;
}

const storeClient = (port: number, secretAccessKey: string) =>
  new DynamoDBClient({ endpoint: `http://127.0.0.1:${port}`, region: 'us-east-1', maxAttempts: 1, credentials: { accessKeyId: 'local', secretAccessKey } });

describe('npm start keeps DATA_DIR private and its store to its own processes', () => {
  it("makes DATA_DIR 0700 and everything in it 0600 (the store's files, the dev chain's, the keys); the store refuses browsers and anything without DATA_DIR's credential", async () => {
    const dataDir = path.join(dataDirs(), 'data');
    const credentialFile = path.join(dataDir, 'store-credential');
    const server = await startServerProcess({ DATA_DIR: dataDir });
    try {
      // A request first, so that its line is in the request log when the modes are checked (the line is
      // written once the response has gone: a moment after the client has it).
      expect((await fetch(`${server.url}/health`)).status).toBe(200);
      const logged = Date.now() + 5_000;
      while (!(await readFile(requestLog.fileOf(dataDir), 'utf8')).includes('"path":"/health"') && Date.now() < logged) await new Promise((resolve) => setTimeout(resolve, 50));
      await expect(readFile(requestLog.fileOf(dataDir), 'utf8')).resolves.toContain('"path":"/health"');
      expect(await openToOthers(dataDir)).toEqual([]);
      const port = server.dynamoDbPort;
      const fromPage = await fetch(`http://127.0.0.1:${port}`, {
        method: 'POST',
        headers: { origin: 'http://page.example', 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.ListTables' },
        body: '{}',
      });
      expect(fromPage.status).toBe(403);
      expect(fromPage.headers.get('access-control-allow-origin')).toBeNull();
      await expect(storeClient(port, 'local').send(new ListTablesCommand({}))).rejects.toMatchObject({ $metadata: { httpStatusCode: 403 } });
      const secret = (await readFile(credentialFile, 'utf8')).trim();
      await expect(storeClient(port, secret).send(new ListTablesCommand({}))).resolves.toMatchObject({ TableNames: ['webhooks'] });

      // The keys CLI signs with its DATA_DIR's credential: with another data directory, the server refuses it and names its own.
      const cli = await runScript('infra/keys-cli.ts', ['create', '--account', 'acme'], { DATA_DIR: dataDir, DYNAMODB_PORT: String(port) });
      expect(cli.code).toBe(0);
      const elsewhere = await runScript('infra/keys-cli.ts', ['list', '--account', 'acme'], { DATA_DIR: path.join(dataDirs(), 'other'), DYNAMODB_PORT: String(port) });
      expect(elsewhere.code).toBe(1);
      expect(elsewhere.stderr).toContain(`this store serves only requests signed with the credential in ${credentialFile}`);
      // The chain CLI's quarantine commands find npm start's store the same way (infra/local/running-store.ts).
      const quarantine = await runScript('infra/chain-cli.ts', ['quarantine', 'list'], { DATA_DIR: dataDir, DYNAMODB_PORT: String(port) });
      expect(quarantine).toMatchObject({ code: 0, stdout: expect.stringMatching(/^No quarantined blocks on chain \d+\.$/m) });
      const unfollowed = await runScript('infra/chain-cli.ts', ['quarantine', 'list', '--chain', '1'], { DATA_DIR: dataDir, DYNAMODB_PORT: String(port) });
      expect(unfollowed).toMatchObject({ code: 1, stderr: expect.stringContaining('chain 1 is not followed by npm start (followed: 31337') });
      const quarantineElsewhere = await runScript('infra/chain-cli.ts', ['quarantine', 'list'], { DATA_DIR: path.join(dataDirs(), 'other'), DYNAMODB_PORT: String(port) });
      expect(quarantineElsewhere.code).not.toBe(0);
      expect(quarantineElsewhere.stderr).toContain(`this store serves only requests signed with the credential in ${credentialFile}`);
    } finally {
      expect(await server.stop('SIGTERM')).toBe(0);
    }
    const offline = await runScript('infra/keys-cli.ts', ['list', '--account', 'acme'], { DATA_DIR: dataDir, DYNAMODB_PORT: String(server.dynamoDbPort) });
    expect(offline.code).toBe(0);
    expect(offline.stdout).toMatch(/active$/m);

    const entries = (await walk(dataDir)).map(({ entry }) => entry);
    // What the walk must have seen for it to mean anything: the store's log, the dev chain's snapshot, the keys.
    expect(entries).toEqual(
      expect.arrayContaining(['store-credential', 'page-token.key', 'dev-api-key', path.join('dev-chain', 'chain.json.gz'), expect.stringMatching(/^dynamodb\/\d+\.log$/)]),
    );
    expect(await openToOthers(dataDir)).toEqual([]);
    stoppedDataDir ??= Promise.resolve(dataDir);
  }, 60_000);

  it('tightens a DATA_DIR made with looser modes (by an earlier version), and says so; so does the keys CLI', async () => {
    const dataDir = path.join(dataDirs(), 'loose');
    await cp(await (stoppedDataDir ??= madeAndStopped()), dataDir, { recursive: true });
    await loosen(dataDir);
    expect(await openToOthers(dataDir)).not.toEqual([]);

    const server = await startServerProcess({ DATA_DIR: dataDir, DEV_CHAIN: 'off' });
    expect(await server.stop('SIGTERM')).toBe(0);
    // The keys CLI needs the server's DATA_DIR as much as its port.
    expect(server.output()).toContain(`More keys: DATA_DIR=${dataDir} DYNAMODB_PORT=${server.dynamoDbPort} npm run keys`);
    expect(logLines(server.output()).filter((line) => String(line.message).startsWith('made DATA_DIR private'))).toEqual([
      expect.objectContaining({ level: 'WARN', dataDir, tightened: expect.any(Number) }),
    ]);
    expect(await openToOthers(dataDir)).toEqual([]);

    await loosen(dataDir);
    const cli = await runScript('infra/keys-cli.ts', ['list', '--account', 'dev'], { DATA_DIR: dataDir, DYNAMODB_PORT: String(server.dynamoDbPort) });
    expect(cli.code).toBe(0);
    expect(cli.stderr).toContain(`Made ${dataDir} private`);
    expect(await openToOthers(dataDir)).toEqual([]);
  }, 60_000);
});
