import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { logLines, startServerProcess } from '../support/processes';
import { useTempDir } from '../support/temp-dir';

const ROOT = path.resolve(__dirname, '../..');
const README_API_LINE = 'API=http://127.0.0.1:${PORT:-3000}';

/** The README's "A curl session" shell block, as a user would paste it. */
function curlSession(): string {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## A curl session'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('README.md has no sh block under "## A curl session"');
  return block;
}

function runBash(script: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', script], { cwd: ROOT, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe("the README's curl session", () => {
  const dataDir = useTempDir('webhooks-readme-');

  it('runs as pasted against npm start, every step answering as the comments say', async () => {
    const block = curlSession();
    // The one change: the server under test listens on a free port, not on 3000.
    expect(block.split('\n').filter((line) => line === README_API_LINE)).toHaveLength(1);
    const server = await startServerProcess({ DATA_DIR: dataDir() });
    let result: Awaited<ReturnType<typeof runBash>>;
    try {
      result = await runBash(block.replace(README_API_LINE, `API=${server.url}`), {
        DATA_DIR: dataDir(),
        DYNAMODB_PORT: String(server.dynamoDbPort),
      });
    } finally {
      await server.stop('SIGTERM');
    }
    expect(result.code).toBe(0);
    const [secret, secretAgain, chains, first, second, page1, page2, got, patched, deactivated, reactivated, removed, gone, invalid, unfollowed, ...rest] =
      logLines(result.stdout);
    expect(rest).toEqual([]);
    expect(secret).toEqual({ secret: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(secretAgain).toEqual(secret);
    expect(chains).toEqual({
      chains: [
        expect.objectContaining({
          chainId: '31337',
          chainName: 'Dev chain (anvil)',
          rpcUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
          follower: expect.objectContaining({ quarantinedBlocks: { count: 0, newest: [] } }),
        }),
      ],
    });
    expect(first).toMatchObject({ name: 'treasury', status: 'active', metadata: { addresses: ['0x71c7656ec7ab88b098defb751b7401b5f6d8976f'] } });
    expect(first).toMatchObject({ chainId: '31337' });
    expect(second).toMatchObject({ chainId: '31337', status: 'active' });
    expect(page1).toEqual({ webhooks: [second], nextPageToken: expect.any(String) });
    expect(page2).toEqual({ webhooks: [first] });
    expect(got).toEqual(first);
    expect(patched).toEqual({ ...first, name: 'treasury with logs', includeLogs: true });
    expect(deactivated).toEqual({ ...patched, status: 'inactive' });
    expect(reactivated).toEqual(patched);
    expect(removed).toEqual(patched);
    expect(gone).toMatchObject({ statusCode: 404, error: 'Not Found' });
    expect(invalid).toEqual({
      message: 'Invalid query parameter pageSize: must be an integer from 1 to 100',
      statusCode: 400,
      error: 'Bad Request',
    });
    expect(unfollowed).toEqual({
      message: 'Invalid body field chainId: chain 43114 is not followed by this service; followed chains: 31337 (GET /v1/chains lists them)',
      statusCode: 400,
      error: 'Bad Request',
    });
  }, 60_000);
});
