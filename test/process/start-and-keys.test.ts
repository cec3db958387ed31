import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { useTempDir } from '../support/temp-dir';
import { webhookInput } from '../support/factories';
import { freePort } from '../support/npm-start';
import { requestLog } from '../../infra/local/local-logger';
import { logLines, runScript, startServerProcess, type RunningServer } from '../support/processes';

const KEY_PATTERN = /whk_[A-Za-z0-9_-]{43}/;

async function call(server: RunningServer, key: string, method: string, urlPath: string, body?: unknown) {
  const response = await fetch(`${server.url}${urlPath}`, {
    method,
    headers: { 'x-service-api-key': key, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}

describe('npm start and the keys CLI, as processes on one data directory', () => {
  const dataDirPath = useTempDir('webhooks-data-');
  const env = () => ({ DATA_DIR: dataDirPath(), AUTHORIZER_CACHE_TTL_SECONDS: '0' });

  it('keeps everything across a SIGTERM and restart, and the keys CLI works with and without a running server', async () => {
    // First start, with stdout not a terminal: the dev key goes to a file only its owner reads,
    // and the output names the file, never the key.
    const first = await startServerProcess(env());
    const keyFile = path.join(dataDirPath(), 'dev-api-key');
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const key = readFileSync(keyFile, 'utf8').trim();
    expect(key).toMatch(new RegExp(`^${KEY_PATTERN.source}$`));
    expect(first.output()).toContain(keyFile);
    expect(first.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // The banner names the request log, and the loop from a transaction to a notification with the key it wrote.
    const requestLogFile = requestLog.fileOf(dataDirPath());
    expect(first.output()).toContain(`Request log: ${requestLogFile}`);
    await waitForOutput(first, /npm run chain -- send --to 0x[0-9a-fA-F]{40} --value 1\.5\n/);
    expect(first.output()).toContain(`npm run receiver -- --key-file ${keyFile} --api ${first.url}`);
    expect(first.output()).toContain(
      `curl -s -X POST -H "x-service-api-key: $(cat ${keyFile})" -H 'content-type: application/json' '${first.url}/v1/webhooks' -d '{"url":"http://127.0.0.1:4000/","chainId":"31337",`,
    );
    expect((await fetch(`${first.url}/health`)).status).toBe(200);

    const created: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      const response = await call(first, key, 'POST', '/v1/webhooks', webhookInput({ name: `hook ${index}`, chainId: '31337' }));
      expect(response.status).toBe(201);
      created.push(response.body.id as string);
    }
    const secret = (await call(first, key, 'POST', '/v1/webhooks:generateOrRotateSharedSecret')).body.secret;
    // The key npm start made says so in the account's listing.
    expect((await call(first, key, 'GET', '/v1/apiKeys')).body.apiKeys).toEqual([expect.objectContaining({ name: 'npm start', current: true })]);
    const firstPage = await call(first, key, 'GET', '/v1/webhooks?pageSize=2');
    expect(firstPage.body.webhooks.map((webhook: { id: string }) => webhook.id)).toEqual([created[2], created[1]]);

    // The CLI finds the running server's store through DYNAMODB_PORT, like npm start, and says so.
    const cliEnv = { ...env(), DYNAMODB_PORT: String(first.dynamoDbPort) };
    const acme = await runScript('infra/keys-cli.ts', ['create', '--account', 'acme'], cliEnv);
    expect(acme.code).toBe(0);
    expect(acme.stderr).toContain(`Using the DynamoDB server on port ${first.dynamoDbPort} (DYNAMODB_PORT), table webhooks`);
    expect(acme.lastLine).toMatch(new RegExp(`^${KEY_PATTERN.source}$`));
    expect((await call(first, acme.lastLine, 'GET', '/v1/webhooks')).body).toEqual({ webhooks: [] });
    const listed = await runScript('infra/keys-cli.ts', ['list', '--account', 'acme'], cliEnv);
    expect(listed.stdout).toMatch(/^[0-9a-f]{12} {2}created \S+ {2}active$/m);
    expect(listed.stdout).not.toContain(acme.lastLine);
    // A key on the command line is refused (it would be in the shell's history), and stays valid.
    const onCommandLine = await runScript('infra/keys-cli.ts', ['revoke', acme.lastLine], cliEnv);
    expect(onCommandLine.code).toBe(2);
    expect(onCommandLine.stderr).toContain('--key-file');
    expect(onCommandLine.stderr).not.toContain(acme.lastLine);
    const keyId = listed.stdout.split(' ', 1)[0]!;
    expect(onCommandLine.stderr).toContain(`treat this one as leaked and revoke it, its id is ${keyId}: npm run keys -- revoke ${keyId} --account <its account>`);
    expect((await call(first, acme.lastLine, 'GET', '/v1/webhooks')).status).toBe(200);
    // Revoked by the id the listing shows, without holding the key.
    const revoked = await runScript('infra/keys-cli.ts', ['revoke', keyId, '--account', 'acme'], cliEnv);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toBe(`Revoked key ${keyId} of account 'acme'. It stops working at once.\n`);
    const acmeKeyFile = path.join(dataDirPath(), 'acme-key');
    writeFileSync(acmeKeyFile, `${acme.lastLine}\n`, { mode: 0o600 });
    const again = await runScript('infra/keys-cli.ts', ['revoke', '--key-file', acmeKeyFile], cliEnv);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(new RegExp(`^Key ${keyId} of account 'acme' was already revoked at \\S+\\.$`, 'm'));
    expect((await call(first, acme.lastLine, 'GET', '/v1/webhooks')).status).toBe(401);
    expect((await runScript('infra/keys-cli.ts', ['list', '--account', 'acme'], cliEnv)).stdout).toMatch(/revoked \S+$/m);

    expect(await first.stop('SIGTERM')).toBe(0);
    const firstOutput = first.output();
    expect(firstOutput).not.toContain(key);
    expect(firstOutput).not.toContain(secret);
    expect(firstOutput).not.toContain('NodeVersionSupportWarning');
    expect(firstOutput).toContain('"message":"stopped"');
    // Request lines go to the request log, 0600, not to the terminal.
    expect(logLines(firstOutput).filter((line) => line.message === 'request')).toEqual([]);
    expect(statSync(requestLogFile).mode & 0o777).toBe(0o600);
    const requestLines = readFileSync(requestLogFile, 'utf8');
    expect(requestLines).not.toContain(key);
    expect(requestLines).not.toContain(acme.lastLine);
    expect(requestLines).not.toContain(secret);
    // Each request's log line names the caller's account, never its key.
    const requests = logLines(requestLines).filter((line) => line.message === 'request');
    expect(requests.filter((line) => line.path === '/v1/webhooks' && line.method === 'POST')).toEqual(
      Array.from({ length: 3 }, () => expect.objectContaining({ status: 201, account: 'dev' })),
    );
    expect(requests.some((line) => line.account === 'acme')).toBe(true);

    // With no server running, the CLI opens the data directory itself, and says so.
    const offlineEnv = { ...env(), DYNAMODB_PORT: String(first.dynamoDbPort) };
    // A name that would turn the operator's line around is refused, as the API refuses it.
    const turned = await runScript('infra/keys-cli.ts', ['create', '--account', 'beta', '--name', 'billing service \u202e(evitca'], offlineEnv);
    expect(turned.code).toBe(2);
    expect(turned.stderr).toContain('--name must not contain invisible or direction-changing characters (U+202E at position 17)');
    const offline = await runScript('infra/keys-cli.ts', ['create', '--account', 'beta', '--name', 'billing service "eu"'], offlineEnv);
    expect(offline.code).toBe(0);
    expect(offline.stderr).toContain(`using the data directory ${path.join(dataDirPath(), 'dynamodb')} (DATA_DIR)`);
    expect(offline.stderr).not.toContain('had no table yet');
    // Listed quoted, so that a name cannot pass for the rest of the operator's line (what hides in one is escaped: test/lib/text.test.ts).
    const betaKeys = (await runScript('infra/keys-cli.ts', ['list', '--account', 'beta'], offlineEnv)).stdout;
    expect(betaKeys).toMatch(/^[0-9a-f]{12} {2}"billing service \\"eu\\"" {2}created \S+ {2}active$/m);

    // Second start on the same directory: no new dev key, same data, old page token still valid.
    const second = await startServerProcess(env());
    try {
      expect(KEY_PATTERN.test(second.output())).toBe(false);
      expect(readFileSync(keyFile, 'utf8').trim()).toBe(key);
      expect((await call(second, key, 'GET', '/v1/webhooks:getSharedSecret')).body).toEqual({ secret });
      const nextPage = await call(second, key, 'GET', `/v1/webhooks?pageSize=2&pageToken=${firstPage.body.nextPageToken}`);
      expect(nextPage.status).toBe(200);
      expect(nextPage.body).toEqual({ webhooks: [expect.objectContaining({ id: created[0], name: 'hook 0' })] });
      expect((await call(second, offline.lastLine, 'GET', '/v1/webhooks')).status).toBe(200);
      expect((await call(second, acme.lastLine, 'GET', '/v1/webhooks')).status).toBe(401);
    } finally {
      expect(await second.stop('SIGINT')).toBe(0);
    }
  }, 60_000);

  it('says so when the data directory it opens has no table, pointing to DYNAMODB_PORT and DATA_DIR', async () => {
    const result = await runScript('infra/keys-cli.ts', ['list', '--account', 'nobody'], {
      DATA_DIR: path.join(dataDirPath(), 'elsewhere'),
      DYNAMODB_PORT: String(await freePort()),
    });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/had no table yet.*DYNAMODB_PORT.*DATA_DIR/);
  });

  it('exits with a usage message and status 2 for an unknown command', async () => {
    const result = await runScript('infra/keys-cli.ts', ['frobnicate'], env());
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("Unknown command 'frobnicate'");
  });

  it('refuses a --name the API would refuse, with status 2, before opening a store', async () => {
    const result = await runScript('infra/keys-cli.ts', ['create', '--account', 'gamma', '--name', 'k'.repeat(257)], env());
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--name must be at most 256 characters');
    expect(result.stderr).not.toMatch(/DYNAMODB|data directory/);
  });
});

/** Resolves once what the server printed matches: the banner is written after the line startServerProcess waits for. */
async function waitForOutput(server: RunningServer, pattern: RegExp): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!pattern.test(server.output())) {
    if (Date.now() > deadline) throw new Error(`the server never printed ${pattern}; it printed:\n${server.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
