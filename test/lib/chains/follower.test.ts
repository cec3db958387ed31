import { encodeFunctionData, getAddress, type Hex } from 'viem';
import { DevCollectibles, DevToken, Forwarder } from '../../../infra/dev-contracts.generated';
import { verifyNotification } from '../../../lib/deliveries/signing';
import { Logger } from '@aws-lambda-powertools/logger';
import { ChainFollower } from '../../../lib/chains/follower';
import { devChainSettings } from '../../../lib/config/chains';
import { MAX_STORED_BODY_BYTES } from '../../../lib/store/messages';
import { randomAddress } from '../../support/factories';
import { chainWebhooks, notificationOf, useDevChain } from '../../support/dev-chain';
import { useLocalService } from '../../support/local-service';
import { NO_QUEUE } from '../../../lib/deliveries/queue';

const CHAIN_ID = '31337';
const chain = useDevChain(CHAIN_ID);
// The followers the tests step themselves queue nothing (NO_QUEUE): the sweep delivers what they
// record, a second after its time rather than the local service's 5.
const client = useLocalService({ DELIVERY_RETRY_SCHEDULE: '0.2,0.4', DELIVERY_TIMEOUT_SECONDS: '1', DELIVERY_SWEEP_GRACE_SECONDS: '1' }, () => ({
  chains: [devChainSettings(CHAIN_ID, chain.rpcUrl())],
  // Chains whose followers the tests below step themselves.
  chainsWithoutFollower: ['31339', '31340'],
}));
const { watch } = chainWebhooks(client, CHAIN_ID);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe('the chain follower on a real anvil', () => {
  test('a value transfer to a watched address is notified once, signed, in the hosted payload', async () => {
    const to = randomAddress();
    const { receiver, secret, webhook } = await watch([to]);
    const from = await chain.fundedAddress();
    const receipt = await chain.send({ from, to, value: 1_500_000_000_000_000_000n });
    const [request] = await receiver.waitFor(1);
    expect(verifyNotification({ rawBody: request!.body, headers: request!.headers as Record<string, string>, secret })).toMatchObject({ xSignature: true, standardWebhooks: true });
    const notification = notificationOf(request!);
    expect(notification).toMatchObject({ webhookId: webhook.id, eventType: 'address_activity' });
    const transaction = notification.event.transaction;
    expect(transaction).toMatchObject({
      txHash: receipt.transactionHash,
      blockHash: receipt.blockHash,
      blockNumber: String(Number(receipt.blockNumber)),
      from,
      to,
      value: '1500000000000000000',
      txStatus: '1',
      chainId: CHAIN_ID,
      networkToken: { tokenName: 'Ether', tokenSymbol: 'ETH', tokenDecimals: 18, valueWithDecimals: '1.5' },
    });
    expect(notification.event.logs).toBeUndefined();
    expect(transaction.internalTransactions).toBeUndefined();
    await sleep(500);
    expect(receiver.requests).toHaveLength(1);
  });

  test('a transaction from a watched address is notified', async () => {
    const from = await chain.fundedAddress();
    const { receiver } = await watch([from]);
    const receipt = await chain.send({ from, to: randomAddress(), value: 1n });
    const [request] = await receiver.waitFor(1);
    expect(notificationOf(request!).event.transaction.txHash).toBe(receipt.transactionHash);
  });

  test('the created contract of a deployment is matched and named', async () => {
    const from = await chain.fundedAddress();
    const nonce = Number(await chain.rpc('eth_getTransactionCount', [from, 'latest']));
    const { getContractAddress } = await import('viem');
    const created = getContractAddress({ from: from as `0x${string}`, nonce: BigInt(nonce) }).toLowerCase();
    const { receiver } = await watch([created]);
    // Init code that deploys a contract returning 42.
    const receipt = await chain.send({ from, data: '0x600a600c600039600a6000f3602a60005260206000f3' });
    const [request] = await receiver.waitFor(1);
    const transaction = notificationOf(request!).event.transaction;
    expect(receipt.contractAddress.toLowerCase()).toBe(created);
    expect(transaction.contractAddress?.toLowerCase()).toBe(created);
  });

  test('an inactive webhook and a webhook on another chain get nothing; an active one on the same block does', async () => {
    const to = randomAddress();
    const inactive = await watch([to]);
    expect((await client.call('DELETE', `/v1/webhooks/${inactive.webhook.id}`, { key: inactive.key })).status).toBe(200);
    const otherChain = await watch([to], { chainId: '43114' });
    const active = await watch([to]);
    await chain.send({ from: await chain.fundedAddress(), to, value: 5n });
    await active.receiver.waitFor(1);
    await sleep(700);
    expect(inactive.receiver.requests).toHaveLength(0);
    expect(otherChain.receiver.requests).toHaveLength(0);
  });

  test('includeLogs and includeInternalTxs add logs and the call tree', async () => {
    const to = randomAddress();
    const { receiver } = await watch([to], { includeLogs: true, includeInternalTxs: true });
    const receipt = await chain.send({ from: await chain.fundedAddress(), to, value: 7n });
    const [request] = await receiver.waitFor(1);
    const { event } = notificationOf(request!);
    expect(event.logs).toEqual([]);
    expect(event.transaction.internalTransactions).toEqual([
      expect.objectContaining({ internalTxType: 'CALL', value: '7', transactionHash: receipt.transactionHash }),
    ]);
    expect(event.transaction.internalTransactions![0]!.to).toBe(getAddress(to));
  });

  test('event signatures: a transaction with none of their logs is not notified', async () => {
    const to = randomAddress();
    const filtered = await watch([to], { metadata: { addresses: [to], eventSignatures: [`0x${'ab'.repeat(32)}`] } });
    const plain = await watch([to]);
    await chain.send({ from: await chain.fundedAddress(), to, value: 3n });
    await plain.receiver.waitFor(1);
    await sleep(700);
    expect(filtered.receiver.requests).toHaveLength(0);
  });

  describe('contracts deployed from the checked-in bytecode', () => {
    const deploy = async (from: string, bytecode: Hex) => (await chain.send({ from, data: bytecode })).contractAddress as string;

    test('an ERC-20 transfer to a watched address is notified with the token named and its value with decimals', async () => {
      const from = await chain.fundedAddress();
      const token = await deploy(from, DevToken.bytecode);
      const to = randomAddress();
      const { receiver } = await watch([to]);
      const data = encodeFunctionData({ abi: DevToken.abi, functionName: 'transfer', args: [to as Hex, 12_500_000_000_000_000_000n] });
      const receipt = await chain.send({ from, to: token, data });
      const [request] = await receiver.waitFor(1);
      const { transaction } = notificationOf(request!).event;
      expect(transaction.erc20Transfers).toEqual([
        {
          transactionHash: receipt.transactionHash,
          type: 'ERC20',
          from: getAddress(from),
          to: getAddress(to),
          value: '12500000000000000000',
          blockTimestamp: transaction.blockTimestamp,
          logIndex: 0,
          erc20Token: { address: getAddress(token), name: 'Dev Token', symbol: 'DEV', decimals: 18, valueWithDecimals: '12.5' },
        },
      ]);
    });

    test('an ERC-721 mint to a watched address is an erc721Transfers entry with its token id', async () => {
      const from = await chain.fundedAddress();
      const collection = await deploy(from, DevCollectibles.bytecode);
      const to = randomAddress();
      const { receiver } = await watch([to]);
      await chain.send({ from, to: collection, data: encodeFunctionData({ abi: DevCollectibles.abi, functionName: 'mint', args: [to as Hex] }) });
      const [request] = await receiver.waitFor(1);
      expect(notificationOf(request!).event.transaction.erc721Transfers).toEqual([
        expect.objectContaining({ type: 'ERC721', to: getAddress(to), tokenId: '1', value: '1', erc721Token: expect.objectContaining({ address: getAddress(collection) }) }),
      ]);
    });

    test('an internal value transfer through a forwarder notifies the recipient only with includeInternalTxs', async () => {
      const from = await chain.fundedAddress();
      const forwarder = await deploy(from, Forwarder.bytecode);
      const to = randomAddress();
      const withInternal = await watch([to], { includeInternalTxs: true });
      const without = await watch([to]);
      const data = encodeFunctionData({ abi: Forwarder.abi, functionName: 'forward', args: [to as Hex] });
      const receipt = await chain.send({ from, to: forwarder, data, value: 500n });
      const [request] = await withInternal.receiver.waitFor(1);
      const { transaction } = notificationOf(request!).event;
      expect(transaction.txHash).toBe(receipt.transactionHash);
      expect(transaction.internalTransactions).toEqual([
        expect.objectContaining({ from: getAddress(from), to: getAddress(forwarder), internalTxType: 'CALL', value: '500' }),
        expect.objectContaining({ from: getAddress(forwarder), to: getAddress(to), internalTxType: 'CALL', value: '500' }),
      ]);
      await sleep(700);
      expect(without.receiver.requests).toHaveLength(0);
    });

    test('a batch of 1 500 ERC-1155 ids, a notification larger than an item holds, arrives whole, signed, and shows in the log', async () => {
      const from = await chain.fundedAddress();
      const collection = await deploy(from, DevCollectibles.bytecode);
      const to = randomAddress();
      const { receiver, secret, key, webhook } = await watch([to], { includeLogs: true });
      const ids = Array.from({ length: 1500 }, (_, index) => BigInt(index + 1));
      const data = encodeFunctionData({ abi: DevCollectibles.abi, functionName: 'mintMany', args: [to as Hex, ids, ids.map(() => 2n)] });
      const receipt = await chain.send({ from, to: collection, data });
      const [request] = await receiver.waitFor(1);
      expect(Buffer.byteLength(request!.body)).toBeGreaterThan(MAX_STORED_BODY_BYTES);
      expect(verifyNotification({ rawBody: request!.body, headers: request!.headers as Record<string, string>, secret })).toMatchObject({ xSignature: true, standardWebhooks: true });
      const { transaction } = notificationOf(request!).event;
      expect(transaction.txHash).toBe(receipt.transactionHash);
      expect(transaction.erc1155Transfers).toHaveLength(1500);
      expect(transaction.erc1155Transfers[1499]).toMatchObject({ type: 'ERC1155', to: getAddress(to), tokenId: '1500', value: '2' });
      const messageId = JSON.parse(request!.body).messageId;
      const logged = await client.call('GET', `/v1/webhooks/${webhook.id}/deliveries/${messageId}`, { key });
      expect(logged.body.body).toBe(request!.body);
    }, 30_000);

    test("event signatures: the token's Transfer signature lets a transfer through; its logs come with includeLogs", async () => {
      const from = await chain.fundedAddress();
      const token = await deploy(from, DevToken.bytecode);
      const to = randomAddress();
      const transferTopic = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
      const { receiver } = await watch([to], { includeLogs: true, metadata: { addresses: [to], eventSignatures: [transferTopic] } });
      await chain.send({ from, to: token, data: encodeFunctionData({ abi: DevToken.abi, functionName: 'transfer', args: [to as Hex, 1n] }) });
      const [request] = await receiver.waitFor(1);
      const { logs } = notificationOf(request!).event;
      expect(logs).toEqual([expect.objectContaining({ address: token, topic0: transferTopic, removed: false })]);
      expect(logs![0]).not.toHaveProperty('topic3');
    });
  });

  describe('a chain followed for the first time', () => {
    // A second node that the service does not follow: these tests take its follower's steps.
    const unfollowed = useDevChain('31339');
    const silent = new Logger({ logLevel: 'SILENT' });
    async function stepsUntilCaughtUp(follower: ChainFollower) {
      let notifications = 0;
      for (let result = await follower.step(); ; result = await follower.step()) {
        notifications += result.notifications;
        if (result.caughtUp) return notifications;
      }
    }

    test('the dev chain is followed from its genesis: a transfer mined before the first step is notified', async () => {
      const to = randomAddress();
      const { receiver } = await watch([to], { chainId: '31339' });
      const from = await unfollowed.fundedAddress();
      const receipt = await unfollowed.send({ from, to, value: 3n });
      await unfollowed.rpc('anvil_mine', ['0x3']);
      expect(await stepsUntilCaughtUp(new ChainFollower(devChainSettings('31339', unfollowed.rpcUrl()), silent, NO_QUEUE))).toBe(1);
      const [request] = await receiver.waitFor(1);
      expect(notificationOf(request!).event.transaction.txHash).toBe(receipt.transactionHash);
    });

    test('another chain is followed from its safe block: its history is not notified, what follows is', async () => {
      const to = randomAddress();
      // The same node under another chain id, with no checkpoint yet.
      const settings = { ...devChainSettings('31340', unfollowed.rpcUrl()), firstCheckpoint: undefined };
      const { receiver } = await watch([to], { chainId: '31340' });
      const from = await unfollowed.fundedAddress();
      await unfollowed.send({ from, to, value: 1n });
      const follower = new ChainFollower(settings, silent, NO_QUEUE);
      expect(await stepsUntilCaughtUp(follower)).toBe(0);
      const receipt = await unfollowed.send({ from, to, value: 2n });
      expect(await stepsUntilCaughtUp(follower)).toBe(1);
      const [request] = await receiver.waitFor(1);
      expect(notificationOf(request!).event.transaction.txHash).toBe(receipt.transactionHash);
      await sleep(300);
      expect(receiver.requests).toHaveLength(1);
    });
  });
});
