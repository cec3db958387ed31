import { devChainSettings } from '../../../lib/config/chains';
import { advanceBackfill, runningBackfillsOfChain } from '../../../lib/store/backfills';
import { getCheckpoint, moveCheckpoint } from '../../../lib/store/chains';
import { randomAccount, randomAddress } from '../../support/factories';
import { chainWebhooks, notificationOf, useDevChain } from '../../support/dev-chain';
import { backfillCalls } from '../../support/backfills';
import { useLocalService } from '../../support/local-service';

const CHAIN_ID = '31337';
const UNRUN_CHAIN_ID = '31342';
const chain = useDevChain(CHAIN_ID);
const client = useLocalService(
  { DELIVERY_RETRY_SCHEDULE: '0.2,0.4', DELIVERY_TIMEOUT_SECONDS: '1', BACKFILL_RPC_REQUESTS_PER_SECOND: '50', BACKFILL_MAX_BLOCKS: '200', BACKFILL_RUNNING_PER_ACCOUNT: '2' },
  // 31342: followed without a follower or backfill runner, for the runner's turns below.
  () => ({ chains: [devChainSettings(CHAIN_ID, chain.rpcUrl())], chainsWithoutFollower: [UNRUN_CHAIN_ID] }),
);
const { watch } = chainWebhooks(client, CHAIN_ID);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const { checkpointAtLeast, backfillEnded } = backfillCalls(client, CHAIN_ID);

async function transfersTo(to: string, count: number) {
  const from = await chain.fundedAddress();
  const receipts = [];
  for (let index = 0; index < count; index += 1) receipts.push(await chain.send({ from, to, value: BigInt(index + 1) }));
  return receipts;
}

describe('backfills on a real anvil', () => {
  test("a webhook created after its address's transfers gets each of them once from a backfill, marked in its log; again or overlapping the live range adds nothing", async () => {
    const to = randomAddress();
    const past = await transfersTo(to, 3);
    const lastBlock = Number(past.at(-1).blockNumber);
    // Followed live before the webhook exists: only a backfill can notify them.
    await checkpointAtLeast(lastBlock);
    const { receiver, key, webhook } = await watch([to]);

    const started = await client.call('POST', `/v1/webhooks/${webhook.id}/backfills`, { key, body: { fromBlock: 0 } });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ webhookId: webhook.id, chainId: CHAIN_ID, status: 'running', fromBlock: 0, nextBlock: 0, notifications: 0 });
    expect(started.body.toBlock).toBeGreaterThanOrEqual(lastBlock);
    const ended = await backfillEnded(key, webhook.id, started.body.backfillId);
    expect(ended).toMatchObject({ status: 'completed', nextBlock: started.body.toBlock + 1, notifications: 3 });
    const requests = await receiver.waitFor(3);
    expect(requests.map((request) => notificationOf(request).event.transaction.txHash).sort()).toEqual(past.map((receipt) => receipt.transactionHash).sort());
    const log = await client.call('GET', `/v1/webhooks/${webhook.id}/deliveries`, { key });
    expect(log.body.deliveries).toHaveLength(3);
    for (const delivery of log.body.deliveries) expect(delivery.backfillId).toBe(started.body.backfillId);

    // A live transfer, then a backfill over everything again: nothing new.
    const live = (await transfersTo(to, 1))[0];
    await receiver.waitFor(4);
    const checkpoint = await checkpointAtLeast(Number(live.blockNumber));
    const again = await client.call('POST', `/v1/webhooks/${webhook.id}/backfills`, { key, body: { fromBlock: 0, toBlock: checkpoint } });
    expect(again.status).toBe(202);
    expect(await backfillEnded(key, webhook.id, again.body.backfillId)).toMatchObject({ status: 'completed', notifications: 0 });
    await sleep(500);
    expect(receiver.requests).toHaveLength(4);
    const liveDelivery = (await client.call('GET', `/v1/webhooks/${webhook.id}/deliveries`, { key })).body.deliveries[0];
    expect(liveDelivery.backfillId).toBeUndefined();

    const listed = await client.call('GET', `/v1/webhooks/${webhook.id}/backfills?pageSize=1`, { key });
    expect(listed.status).toBe(200);
    expect(listed.body.backfills.map((one: { backfillId: string }) => one.backfillId)).toEqual([again.body.backfillId]);
    const second = await client.call('GET', `/v1/webhooks/${webhook.id}/backfills?pageSize=1&pageToken=${listed.body.nextPageToken}`, { key });
    expect(second.body.backfills.map((one: { backfillId: string }) => one.backfillId)).toEqual([started.body.backfillId]);
    expect(second.body.nextPageToken).toBeUndefined();
  });

  test('the limits: one running per webhook, so many per account, a range within the checkpoint and the longest range; cancel stops one and frees its slot', async () => {
    const { key, webhook } = await watch([randomAddress()]);
    const head = Number(await chain.rpc('eth_blockNumber'));
    await chain.rpc('anvil_mine', ['0x12c']);
    const checkpoint = await checkpointAtLeast(head + 300);
    // 150 blocks at 50 requests a second: still running when the limits below are checked and it is cancelled.
    const from = checkpoint - 150;
    const path = `/v1/webhooks/${webhook.id}/backfills`;
    const refused = async (body: unknown, message: RegExp) => {
      const response = await client.call('POST', path, { key, body });
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
      expect(response.body.message).toMatch(message);
    };
    await refused({ fromBlock: 0, toBlock: checkpoint + 1000 }, /^Invalid body field toBlock: must be at most \d+, chain 31337's checkpoint/);
    await refused({ fromBlock: 10, toBlock: 5 }, /^Invalid body field fromBlock: must be at most toBlock \(5\)/);
    await refused({ fromBlock: -1 }, /^Invalid body field fromBlock: must be a block number/);
    await refused({ fromBlock: 1.5 }, /^Invalid body field fromBlock: must be a block number/);
    await refused({ fromBlock: '0x10' }, /^Invalid body field fromBlock: must be a block number/);
    await refused({ fromBlock: 0, until: 5 }, /^Unknown body field until; allowed: fromBlock, toBlock/);
    await refused({ fromBlock: checkpoint - 200 }, /^Invalid body field fromBlock: a backfill covers at most 200 blocks \(the backfills.maxBlocks limit\), from \d+ to \d+ is 201: split the range/);

    const first = await client.call('POST', path, { key, body: { fromBlock: from } });
    expect(first.status).toBe(202);
    await refused({ fromBlock: from }, new RegExp(`^Webhook ${webhook.id} has a running backfill \\(${first.body.backfillId}\\): one runs at a time per webhook`));
    const other = await client.call('POST', '/v1/webhooks', { key, body: { url: 'http://127.0.0.1:9/hook', chainId: CHAIN_ID, eventType: 'address_activity', metadata: { addresses: [randomAddress()] } } });
    const third = await client.call('POST', '/v1/webhooks', { key, body: { url: 'http://127.0.0.1:9/hook', chainId: CHAIN_ID, eventType: 'address_activity', metadata: { addresses: [randomAddress()] } } });
    expect((await client.call('POST', `/v1/webhooks/${other.body.id}/backfills`, { key, body: { fromBlock: from } })).status).toBe(202);
    const overLimit = await client.call('POST', `/v1/webhooks/${third.body.id}/backfills`, { key, body: { fromBlock: from } });
    expect(overLimit.status).toBe(400);
    expect(overLimit.body.message).toMatch(/^At most 2 backfills run at once per account \(the backfills.runningPerAccount limit\)/);

    const cancelled = await client.call('DELETE', `${path}/${first.body.backfillId}`, { key });
    expect(cancelled.status).toBe(202);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', reason: 'cancelled by a DELETE call' });
    const stopped = (await client.call('GET', `${path}/${first.body.backfillId}`, { key })).body;
    await sleep(500);
    expect((await client.call('GET', `${path}/${first.body.backfillId}`, { key })).body).toMatchObject({ status: 'cancelled', nextBlock: stopped.nextBlock });
    // Its slot is free: the third webhook's backfill starts.
    expect((await client.call('POST', `/v1/webhooks/${third.body.id}/backfills`, { key, body: { fromBlock: from } })).status).toBe(202);
    // Cancelling again answers the backfill as it is.
    expect((await client.call('DELETE', `${path}/${first.body.backfillId}`, { key })).body.status).toBe('cancelled');
  });

  test("the chain's running backfills come in turns: one worked on goes behind those waiting, whatever account started first", async () => {
    const hash = `0x${'1'.repeat(64)}`;
    await moveCheckpoint(UNRUN_CHAIN_ID, await getCheckpoint(UNRUN_CHAIN_ID), { number: 100, hash, recent: [{ number: 100, hash }] });
    const started = [];
    for (const account of [randomAccount(), randomAccount()]) {
      const key = await client.keyFor(account);
      const webhook = await client.call('POST', '/v1/webhooks', { key, body: { url: 'http://127.0.0.1:9/hook', chainId: UNRUN_CHAIN_ID, eventType: 'address_activity', metadata: { addresses: [randomAddress()] } } });
      const backfill = await client.call('POST', `/v1/webhooks/${webhook.body.id}/backfills`, { key, body: { fromBlock: 0 } });
      expect(backfill.status).toBe(202);
      started.push({ account, ...backfill.body });
      await sleep(5);
    }
    const [first, second] = started;
    const order = async () => (await runningBackfillsOfChain(UNRUN_CHAIN_ID, 10)).map(({ backfillId }) => backfillId);
    expect(await order()).toEqual([first.backfillId, second.backfillId]);
    expect(await advanceBackfill({ ...first, status: 'running' }, 50, 0)).toBe(true);
    expect(await order()).toEqual([second.backfillId, first.backfillId]);
  });
});
