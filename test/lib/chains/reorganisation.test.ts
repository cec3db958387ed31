import { devChainSettings } from '../../../lib/config/chains';
import { getCheckpoint } from '../../../lib/store/chains';
import { randomAddress } from '../../support/factories';
import { chainWebhooks, notificationOf, useDevChain } from '../../support/dev-chain';
import { useLocalService } from '../../support/local-service';

const CHAIN_ID = '31338';
const CONFIRMATIONS = 2;
const chain = useDevChain(CHAIN_ID);
const client = useLocalService({ DELIVERY_RETRY_SCHEDULE: '0.2,0.4', DELIVERY_TIMEOUT_SECONDS: '1' }, () => ({
  chains: [{ ...devChainSettings(CHAIN_ID, chain.rpcUrl()), confirmations: CONFIRMATIONS }],
}));
const { watch } = chainWebhooks(client, CHAIN_ID);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const DEV_ACCOUNT = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';
const mine = (blocks: number) => chain.rpc('anvil_mine', [`0x${blocks.toString(16)}`]);
const canonicalHash = async (number: string) => (await chain.rpc('eth_getBlockByNumber', [`0x${Number(number).toString(16)}`, false])).hash;

async function caughtUp() {
  const head = Number(await chain.rpc('eth_blockNumber'));
  for (let tries = 0; tries < 200; tries += 1) {
    if ((await getCheckpoint(CHAIN_ID))?.number === head - CONFIRMATIONS) return;
    await sleep(50);
  }
  throw new Error('the follower did not catch up');
}

describe(`a followed chain with ${CONFIRMATIONS} confirmations`, () => {
  test('a block is notified only once it is deep enough', async () => {
    const to = randomAddress();
    const { receiver } = await watch([to]);
    await chain.send({ from: DEV_ACCOUNT, to, value: 1n });
    await mine(CONFIRMATIONS - 1);
    await sleep(600);
    expect(receiver.requests).toHaveLength(0);
    await mine(1);
    await receiver.waitFor(1);
  });

  test('a reorganisation above the confirmation depth is never notified: only the blocks that replaced it are', async () => {
    const to = randomAddress();
    const { receiver } = await watch([to]);
    const dropped = await chain.send({ from: DEV_ACCOUNT, to, value: 1n });
    await chain.rpc('anvil_reorg', [1, [[{ from: DEV_ACCOUNT, to, value: '0x9' }, 0]]]);
    await mine(CONFIRMATIONS + 1);
    await caughtUp();
    const requests = await receiver.waitFor(1);
    await sleep(500);
    const notified = receiver.requests.map((request) => notificationOf(request).event.transaction);
    expect(notified.some((transaction) => transaction.blockHash === dropped.blockHash)).toBe(false);
    expect(notified.some((transaction) => transaction.value === '9')).toBe(true);
    for (const transaction of notified) expect(transaction.blockHash).toBe(await canonicalHash(transaction.blockNumber));
    expect(new Set(requests.map((request) => notificationOf(request).messageId)).size).toBe(requests.length);
  });

  test('a reorganisation below the confirmation depth: the follower walks back and notifies the new blocks', async () => {
    const to = randomAddress();
    const { receiver } = await watch([to]);
    const first = await chain.send({ from: DEV_ACCOUNT, to, value: 1n });
    await mine(CONFIRMATIONS);
    const [sent] = await receiver.waitFor(1);
    expect(notificationOf(sent!).event.transaction.blockHash).toBe(first.blockHash);
    await caughtUp();
    await chain.rpc('anvil_reorg', [CONFIRMATIONS + 1, [[{ from: DEV_ACCOUNT, to, value: '0x7' }, 0]]]);
    await mine(CONFIRMATIONS);
    await caughtUp();
    await sleep(500);
    const replacement = receiver.requests.map(notificationOf).find((notification) => notification.event.transaction.value === '7');
    expect(replacement).toBeDefined();
    const { transaction } = replacement!.event;
    expect(transaction.blockHash).toBe(await canonicalHash(transaction.blockNumber));
    const ids = receiver.requests.map((request) => notificationOf(request).messageId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('catches up 500 blocks mined at once and notifies the activity in them', async () => {
    const to = randomAddress();
    const { receiver } = await watch([to]);
    await mine(250);
    const receipt = await chain.send({ from: DEV_ACCOUNT, to, value: 2n });
    await mine(250);
    await caughtUp();
    const [request] = await receiver.waitFor(1);
    expect(notificationOf(request!).event.transaction.txHash).toBe(receipt.transactionHash);
  });
});
