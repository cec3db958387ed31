import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { startDevChain } from '../../infra/local/dev-chain';
import { childrenOf, logLines, startServerProcess, waitUntilGone } from '../support/processes';
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

it('after anvil is killed (SIGKILL), the chain it saved comes back with the traces of its blocks, which the follower needs', async () => {
  const stateDirectory = path.join(dataDir(), 'dev-chain-traces');
  const rpc = async (url: string, method: string, params: unknown[] = []) =>
    ((await (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) })).json()) as any).result;
  const first = await startDevChain({ port: 0, chainId: '31337', stateDirectory });
  const [anvil] = childrenOf(first.pid); // the watchdog's child
  for (let index = 0; index < 3; index += 1) {
    await rpc(first.rpcUrl, 'eth_sendTransaction', [{ from: '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266', to: '0x' + '33'.repeat(20), value: '0x1' }]);
  }
  // anvil saves its chain every second: wait for a save made after the last transaction.
  const sent = Date.now();
  const stateFile = path.join(stateDirectory, 'state.json');
  while (!existsSync(stateFile) || statSync(stateFile).mtimeMs <= sent + 100) await new Promise((resolve) => setTimeout(resolve, 100));
  process.kill(anvil!, 'SIGKILL');
  process.kill(first.pid, 'SIGKILL');
  await waitUntilGone(anvil!);
  const second = await startDevChain({ port: 0, chainId: '31337', stateDirectory });
  try {
    expect(Number(await rpc(second.rpcUrl, 'eth_blockNumber'))).toBe(3);
    const traces = await rpc(second.rpcUrl, 'debug_traceBlockByNumber', ['0x2', { tracer: 'callTracer' }]);
    expect(traces).toEqual([expect.objectContaining({ result: expect.objectContaining({ to: '0x' + '33'.repeat(20) }) })]);
  } finally {
    await second.stop();
  }
}, 60_000);
