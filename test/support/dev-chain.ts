import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { findAnvil } from '../../infra/local/dev-chain';
import { devChainFiles } from '../../infra/local/dev-chain-history';
import { addressActivityNotification } from '../../lib/schemas/notification';
import { webhooksApi } from '../http/support/webhooks-api';
import type { TestClient } from './local-service';
import { startReceiver, type ReceivedRequest, type Receiver } from './receiver';

export interface TestChain {
  rpcUrl: () => string;
  /** A JSON-RPC call to the node. */
  rpc: <T = any>(method: string, params?: unknown[]) => Promise<T>;
  /** A funded address that anvil signs for (impersonated), new for each call. */
  fundedAddress: () => Promise<string>;
  /** Sends a transaction from an impersonated or dev account and waits for its receipt. */
  send: (transaction: { from: string; to?: string; value?: bigint; data?: string }) => Promise<any>;
}

/**
 * A real anvil for one test file, on a free loopback port, in memory: as the dev chain runs it
 * (infra/local/dev-chain.ts) but without its keeper process, which a test's chain does not need
 * (no snapshots, and jest stops it), and whose start and relaying of anvil's output cost each file
 * CPU. Its recent states go to a directory of its own, as the keeper's do.
 */
export function useDevChain(chainId = '31337'): TestChain {
  let chain: Awaited<ReturnType<typeof startPlainAnvil>> | undefined;
  let cacheDirectory: string | undefined;
  beforeAll(async () => {
    cacheDirectory = await mkdtemp(path.join(tmpdir(), 'webhooks-test-chain-'));
    chain = await startPlainAnvil(['--chain-id', chainId, '--cache-path', cacheDirectory]);
  });
  afterAll(async () => {
    await chain?.stop('SIGKILL');
    if (cacheDirectory) await rm(cacheDirectory, { recursive: true, force: true });
  });
  const rpc = <T>(method: string, params: unknown[] = []) => jsonRpc<T>(chain!.rpcUrl, method, params);
  return {
    rpcUrl: () => chain!.rpcUrl,
    rpc,
    fundedAddress: async () => {
      const address = `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(20))).toString('hex')}`;
      await rpc('anvil_setBalance', [address, '0x56bc75e2d63100000']);
      await rpc('anvil_impersonateAccount', [address]);
      return address;
    },
    send: (transaction) => sendTransaction(chain!.rpcUrl, transaction),
  };
}

let rpcId = 0;

/** A JSON-RPC call to a node. */
export async function jsonRpc<T = any>(rpcUrl: string, method: string, params: unknown[] = []): Promise<T> {
  const response = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++rpcId, method, params }),
  });
  const body = (await response.json()) as { result?: T; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result as T;
}

/** Sends a transaction from an impersonated or dev account and waits for its receipt. */
export async function sendTransaction(rpcUrl: string, { from, to, value, data }: { from: string; to?: string; value?: bigint; data?: string }) {
  const hash = await jsonRpc<string>(rpcUrl, 'eth_sendTransaction', [
    { from, ...(to ? { to } : {}), ...(value !== undefined ? { value: `0x${value.toString(16)}` } : {}), ...(data ? { data } : {}) },
  ]);
  for (let tries = 0; tries < 100; tries += 1) {
    const receipt = await jsonRpc(rpcUrl, 'eth_getTransactionReceipt', [hash]);
    if (receipt) return receipt;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no receipt for ${hash}`);
}

/** anvil's first dev account, which it signs for. */
export const DEV_ACCOUNT = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';

/** anvil run on its own (not as the dev chain), with `args`, on a free loopback port. */
export async function startPlainAnvil(args: string[]): Promise<{ rpcUrl: string; stop: (signal: NodeJS.Signals) => Promise<void> }> {
  const anvil = spawn(findAnvil()!, ['--host', '127.0.0.1', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => anvil.once('exit', () => resolve()));
  const rpcUrl = await new Promise<string>((resolve, reject) => {
    void exited.then(() => reject(new Error(`anvil ${args.join(' ')} exited before listening`)));
    createInterface({ input: anvil.stdout }).on('line', (line) => {
      const listening = /Listening on ([\d.]+:\d+)/.exec(line);
      if (listening) resolve(`http://${listening[1]}`);
    });
  });
  return {
    rpcUrl,
    stop: async (signal) => {
      anvil.kill(signal);
      await exited;
    },
  };
}

/**
 * Gives the dev chain kept in `stateDirectory` a history of `blocks` blocks, a transfer from the dev
 * account in every `transferEvery`-th of them, as if it had mined them, and returns the transfers.
 * A plain anvil mines them, on Cancun and keeping no state per block, in a few seconds where the
 * dev chain itself (Prague, with a state per block for traces) takes a minute and a half or more.
 */
export async function seedDevChainHistory(stateDirectory: string, blocks: number, transferEvery: number) {
  const anvil = await startPlainAnvil(['--hardfork', 'cancun', '--prune-history']);
  try {
    const transfers: { hash: string; blockNumber: number }[] = [];
    for (let head = 0; head < blocks; ) {
      const receipt = await sendTransaction(anvil.rpcUrl, { from: DEV_ACCOUNT, to: `0x${'77'.repeat(20)}`, value: 1n });
      head = Number(receipt.blockNumber);
      transfers.push({ hash: receipt.transactionHash as string, blockNumber: head });
      const empty = Math.min(transferEvery - 1, blocks - head);
      if (empty > 0) await jsonRpc(anvil.rpcUrl, 'anvil_mine', [`0x${empty.toString(16)}`]);
      head += empty;
    }
    const gzipped = await jsonRpc<string>(anvil.rpcUrl, 'anvil_dumpState', [false]);
    await mkdir(stateDirectory, { recursive: true });
    await writeFile(devChainFiles(stateDirectory).snapshot, Buffer.from(gzipped.slice(2), 'hex'));
    return transfers;
  } finally {
    await anvil.stop('SIGKILL');
  }
}

/** Webhooks on the test chain, each with a receiver of its own on loopback, closed after each test. */
export function chainWebhooks(client: TestClient, chainId: string) {
  const api = webhooksApi(client);
  const receivers: Receiver[] = [];
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
  });
  return {
    /** A receiver, and a webhook (of a new account with a secret) watching `addresses` that sends to it. */
    watch: async (addresses: string[], overrides: Record<string, unknown> = {}) => {
      const receiver = await startReceiver();
      receivers.push(receiver);
      const key = await api.newAccountKey();
      const { body } = await client.call('POST', '/v1/webhooks:generateOrRotateSharedSecret', { key });
      const webhook = await api.create(key, { url: receiver.url, chainId, metadata: { addresses }, ...overrides });
      return { receiver, key, secret: body.secret as string, webhook };
    },
  };
}

/** A received notification, parsed by the schema the service builds them with. */
export const notificationOf = (request: ReceivedRequest) => addressActivityNotification.parse(JSON.parse(request.body));
