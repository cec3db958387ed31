import path from 'node:path';
import { childrenOf, logLines, startServerProcess, waitUntilGone } from '../support/processes';
import { sideBySide } from '../support/side-by-side';
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

// As for the store, the gateway and the background work (supervision.test.ts): a dev chain gone while
// the server runs stops the server, saying so, rather than leaving it following a chain that is gone.
// The keeper is the server's child, as the store is; anvil is the keeper's. A server of its own for each.
const victims = ['keeper', 'anvil'] as const;
const serverAfterKill = sideBySide(victims, async (victim) => {
  const server = await startServerProcess({ DATA_DIR: path.join(dataDir(), `after-${victim}-kill`), GATEWAY_PROCESSES: '1' });
  const started = logLines(server.output()).find((line) => line.message === 'started')!;
  const keeper = (started.devChain as { pid: number }).pid;
  const [anvil] = childrenOf(keeper, 'anvil');
  const others = [started.dynamoDbPid as number, started.backgroundPid as number, ...(started.gatewayPids as number[])];
  process.kill(victim === 'keeper' ? keeper : anvil!, 'SIGKILL');
  return { server, rpcUrl: (started.devChain as { rpcUrl: string }).rpcUrl, pids: [keeper, anvil!, ...others], exitCode: await server.stop('SIGCONT') }; // stop waits for the exit; SIGCONT changes nothing
});

it.each([
  ['keeper', { signal: 'SIGKILL' }],
  ['anvil', { exitCode: 1 }],
] as const)('a SIGKILL of the dev chain (its %s) is reported, stops the others and exits with 1', async (victim, exit) => {
  const { server, rpcUrl, pids, exitCode } = await serverAfterKill(victim);
  expect(exitCode).toBe(1);
  const lines = logLines(server.output());
  expect(lines).toContainEqual(expect.objectContaining({ message: 'the dev chain exited; stopping', ...exit }));
  expect(lines.at(-1)).toMatchObject({ message: 'stopped' });
  for (const pid of pids) await waitUntilGone(pid);
  expect(await answers(rpcUrl)).toBe(false);
}, 90_000);
