import { startDevChain, type DevChain } from '../../infra/local/dev-chain';
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

/** A real anvil for one test file, on a free loopback port, in memory. */
export function useDevChain(chainId = '31337'): TestChain {
  let chain: DevChain | undefined;
  beforeAll(async () => {
    chain = await startDevChain({ port: 0, chainId });
  });
  afterAll(async () => {
    await chain?.stop();
  });
  let id = 0;
  const rpc = async <T>(method: string, params: unknown[] = []): Promise<T> => {
    const response = await fetch(chain!.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
    });
    const body = (await response.json()) as { result?: T; error?: { message: string } };
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result as T;
  };
  return {
    rpcUrl: () => chain!.rpcUrl,
    rpc,
    fundedAddress: async () => {
      const address = `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(20))).toString('hex')}`;
      await rpc('anvil_setBalance', [address, '0x56bc75e2d63100000']);
      await rpc('anvil_impersonateAccount', [address]);
      return address;
    },
    send: async ({ from, to, value, data }) => {
      const hash = await rpc<string>('eth_sendTransaction', [
        { from, ...(to ? { to } : {}), ...(value !== undefined ? { value: `0x${value.toString(16)}` } : {}), ...(data ? { data } : {}) },
      ]);
      for (let tries = 0; tries < 100; tries += 1) {
        const receipt = await rpc('eth_getTransactionReceipt', [hash]);
        if (receipt) return receipt;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      throw new Error(`no receipt for ${hash}`);
    },
  };
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
