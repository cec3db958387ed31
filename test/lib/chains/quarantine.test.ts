import { Logger } from '@aws-lambda-powertools/logger';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { isTransientFault } from '../../../lib/chains/faults';
import { ChainFollower, QUARANTINE_AFTER_ATTEMPTS } from '../../../lib/chains/follower';
import { quarantinedBlocks, retakeQuarantinedBlock, RetakeFailed } from '../../../lib/chains/quarantine';
import { ChainNode, LaggingNodeError } from '../../../lib/chains/rpc';
import { devChainSettings } from '../../../lib/config/chains';
import { NotFound } from '../../../lib/errors';
import { deleteQuarantinedBlock, putQuarantinedBlock } from '../../../lib/store/chains';
import { dynamoDb, tableName } from '../../../lib/store/client';
import { breakWebhookItem, breakWebhookRecording } from '../../support/broken-webhook';
import { randomAddress } from '../../support/factories';
import { chainWebhooks, notificationOf, useDevChain } from '../../support/dev-chain';
import { useLocalService } from '../../support/local-service';
import { startReceiver } from '../../support/receiver';
import { stepsUntilCaughtUp } from '../../support/follower-steps';
import { NO_QUEUE } from '../../../lib/deliveries/queue';

// A node the service does not follow: the test takes its follower's steps, one at a time.
const CHAIN_ID = '31341';
const chain = useDevChain(CHAIN_ID);
// Its steps queue nothing (NO_QUEUE): the sweep delivers what they record, a second after its time rather than the local service's 5.
const client = useLocalService(
  { DELIVERY_RETRY_SCHEDULE: '0.2,0.4', DELIVERY_TIMEOUT_SECONDS: '1', DELIVERY_SWEEP_GRACE_SECONDS: '1' },
  { chainsWithoutFollower: [CHAIN_ID] },
);
const { watch } = chainWebhooks(client, CHAIN_ID);
const silent = new Logger({ logLevel: 'SILENT' });
const settings = () => devChainSettings(CHAIN_ID, chain.rpcUrl());

describe("a webhook whose notifications keep failing to record", () => {
  test("is quarantined alone after 5 attempts: another account's webhook in the same block is notified, the chain goes on, and an operator retakes it once fixed", async () => {
    const [broken, before, after] = [randomAddress(), randomAddress(), randomAddress()];
    const faulty = await watch([broken]);
    const sound = await watch([broken]);
    const bystander = await watch([before, after]);
    const repair = await breakWebhookRecording(faulty.webhook.id);
    const from = await chain.fundedAddress();
    const first = await chain.send({ from, to: before, value: 1n });
    const failing = await chain.send({ from, to: broken, value: 2n });
    const last = await chain.send({ from, to: after, value: 3n });

    // The three blocks are one catch-up batch; only the faulty webhook's notification of the failing one is quarantined.
    await stepsUntilCaughtUp(new ChainFollower(settings(), silent, NO_QUEUE));
    const notified = await bystander.receiver.waitFor(2);
    expect(notified.map((request) => notificationOf(request).event.transaction.txHash).sort()).toEqual([first.transactionHash, last.transactionHash].sort());
    const [soundRequest] = await sound.receiver.waitFor(1);
    expect(notificationOf(soundRequest!).event.transaction.txHash).toBe(failing.transactionHash);
    const number = Number(failing.blockNumber);
    const record = { number, hash: failing.blockHash, webhookId: faulty.webhook.id, account: expect.any(String), quarantinedAt: expect.any(Number) };
    expect(await quarantinedBlocks(settings())).toEqual([
      { ...record, reason: expect.stringMatching(/^ValidationException: /), attempts: QUARANTINE_AFTER_ATTEMPTS },
    ]);

    // Taken again before the cause is fixed: it fails, and stays quarantined with one attempt more.
    await expect(retakeQuarantinedBlock(settings(), number, silent, NO_QUEUE)).rejects.toThrow(/failed again: WebhooksFailed: /);
    expect(await quarantinedBlocks(settings())).toEqual([expect.objectContaining({ ...record, attempts: QUARANTINE_AFTER_ATTEMPTS + 1 })]);

    await repair();
    const retaken = await retakeQuarantinedBlock(settings(), number, silent, NO_QUEUE);
    const [request] = await faulty.receiver.waitFor(1);
    expect(notificationOf(request!).event.transaction.txHash).toBe(failing.transactionHash);
    expect(retaken).toEqual({ number, hash: failing.blockHash, notifications: 1 });
    expect(sound.receiver.requests).toHaveLength(1);
    expect(await quarantinedBlocks(settings())).toEqual([]);
    await expect(retakeQuarantinedBlock(settings(), number, silent, NO_QUEUE)).rejects.toThrow(NotFound);
  }, 60_000);

  test('a webhook item that cannot be read as a webhook is skipped: the others of its block are notified, nothing is quarantined', async () => {
    const address = randomAddress();
    const unreadable = await watch([address]);
    const sound = await watch([address]);
    await breakWebhookItem(unreadable.webhook.id);
    const receipt = await chain.send({ from: await chain.fundedAddress(), to: address, value: 1n });
    expect(await stepsUntilCaughtUp(new ChainFollower(settings(), silent, NO_QUEUE))).toEqual([]);
    const [request] = await sound.receiver.waitFor(1);
    expect(notificationOf(request!).event.transaction.txHash).toBe(receipt.transactionHash);
    expect(await quarantinedBlocks(settings())).toEqual([]);
    expect(unreadable.receiver.requests).toHaveLength(0);
  }, 60_000);
});

describe('a retake whose node fails', () => {
  test("says why without the RPC URL: the provider's key in it never leaves", async () => {
    const providerKey = 'fake-provider-key-5d1e09';
    const failing = await startReceiver(() => ({ status: 500, body: 'internal error' }));
    const number = 9_000_001;
    await putQuarantinedBlock(CHAIN_ID, { number, reason: 'TypeError: earlier', attempts: QUARANTINE_AFTER_ATTEMPTS, quarantinedAt: Date.now() });
    try {
      const error = await retakeQuarantinedBlock(devChainSettings(CHAIN_ID, `${failing.url}/v3/${providerKey}`), number, silent, NO_QUEUE).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(RetakeFailed);
      expect((error as Error).message).toMatch(/^block 9000001 of chain 31341 could not be read: HttpRequestError: /);
      expect(JSON.stringify(error, Object.getOwnPropertyNames(error))).not.toContain(providerKey);
    } finally {
      await failing.close();
      await deleteQuarantinedBlock(CHAIN_ID, number);
    }
  });
});

describe('which faults may pass by asking again', () => {
  test('the node behind, an HTTP 5xx, a refused connection and store throttling are transient', async () => {
    expect(isTransientFault(new LaggingNodeError('block 5 is not known yet'))).toBe(true);
    const failing = await startReceiver(() => ({ status: 503 }));
    try {
      const error = await new ChainNode(failing.url, 'off').head().catch((caught: unknown) => caught);
      expect(isTransientFault(error)).toBe(true);
    } finally {
      await failing.close();
    }
    const closed = await startReceiver();
    await closed.close();
    expect(isTransientFault(await new ChainNode(closed.url, 'off').head().catch((caught: unknown) => caught))).toBe(true);
    expect(isTransientFault(Object.assign(new Error('Rate exceeded'), { name: 'ProvisionedThroughputExceededException', $fault: 'client' }))).toBe(true);
  });

  test('an item the store refuses and an error of the code are not', async () => {
    const tooLarge = await dynamoDb()
      .send(new PutItemCommand({ TableName: tableName(), Item: { pk: { S: 'QUARANTINE-TEST' }, sk: { S: 'LARGE' }, data: { S: 'x'.repeat(410_000) } } }))
      .catch((caught: unknown) => caught);
    expect((tooLarge as Error).name).toBe('ValidationException');
    expect(isTransientFault(tooLarge)).toBe(false);
    expect(isTransientFault(new TypeError("Cannot read properties of undefined (reading 'eventSignatures')"))).toBe(false);
  });
});
