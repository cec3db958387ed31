import { logLines, startServerProcess } from '../support/processes';
import { useTempDir } from '../support/temp-dir';

const dataDir = useTempDir('webhooks-dev-chain-supervision-');

async function answers(rpcUrl: string): Promise<boolean> {
  try {
    const response = await fetch(rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' });
    return response.ok;
  } catch {
    return false;
  }
}

it('the dev chain stops when the server is killed on its own (SIGKILL), leaving its port free', async () => {
  const server = await startServerProcess({ DATA_DIR: dataDir() });
  const started = logLines(server.output()).find((line: any) => line.message === 'started') as any;
  const { rpcUrl } = started.devChain as { rpcUrl: string };
  expect(await answers(rpcUrl)).toBe(true);
  // Pasted as shown, the banner's hint talks to this server's chain, not one on the default port.
  expect(server.output()).toContain(`Dev chain 31337 at ${rpcUrl} (try: DEV_CHAIN_PORT=${new URL(rpcUrl).port} npm run chain -- accounts)`);
  await server.stop('SIGKILL');
  const deadline = Date.now() + 10_000;
  while ((await answers(rpcUrl)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  expect(await answers(rpcUrl)).toBe(false);
}, 60_000);
