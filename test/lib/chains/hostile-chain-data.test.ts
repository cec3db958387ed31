import { encodeFunctionData, getAddress, type Hex } from 'viem';
import { BadUtf8Token, HugeNameToken, LogFlood, RevertingNameToken } from '../../../infra/dev-contracts.generated';
import { TOKEN_NAME_MAX_CHARS } from '../../../lib/chains/tokens';
import { devChainSettings } from '../../../lib/config/chains';
import { getTokenMetadata } from '../../../lib/store/chains';
import { MAX_STORED_BODY_BYTES } from '../../../lib/store/messages';
import { randomAddress } from '../../support/factories';
import { chainWebhooks, notificationOf, useDevChain, type TestChain } from '../../support/dev-chain';
import { useLocalService } from '../../support/local-service';
import type { ReceivedRequest } from '../../support/receiver';

const CHAIN_ID = '31337';
const chain = useDevChain(CHAIN_ID);
const client = useLocalService({ DELIVERY_RETRY_SCHEDULE: '0.2,0.4', DELIVERY_TIMEOUT_SECONDS: '1' }, () => ({
  chains: [devChainSettings(CHAIN_ID, chain.rpcUrl())],
}));
const { watch } = chainWebhooks(client, CHAIN_ID);

const deploy = async (from: string, bytecode: Hex) => (await chain.send({ from, data: bytecode })).contractAddress as string;
const transferData = (to: string) => encodeFunctionData({ abi: HugeNameToken.abi, functionName: 'transfer', args: [to as Hex, 5n] });

/** Another account's ordinary transfer, in a block after the hostile one: the chain went on past it. */
async function anotherAccountIsNotifiedAfter(hostileBlock: string, sender: TestChain) {
  const to = randomAddress();
  const { receiver } = await watch([to]);
  const receipt = await sender.send({ from: await sender.fundedAddress(), to, value: 1n });
  expect(BigInt(receipt.blockNumber)).toBeGreaterThan(BigInt(hostileBlock));
  const [request] = await receiver.waitFor(1);
  expect(notificationOf(request!).event.transaction.txHash).toBe(receipt.transactionHash);
}

/** A transfer of the token to a watched address, and the token as its notification names it. */
async function tokenAsNotified(bytecode: Hex) {
  const from = await chain.fundedAddress();
  const token = await deploy(from, bytecode);
  const to = randomAddress();
  const { receiver } = await watch([to]);
  const receipt = await chain.send({ from, to: token, data: transferData(to) });
  await anotherAccountIsNotifiedAfter(receipt.blockNumber, chain);
  const [request] = await receiver.waitFor(1);
  const [transfer] = notificationOf(request!).event.transaction.erc20Transfers;
  expect(transfer).toMatchObject({ to: getAddress(to), value: '5' });
  return { token, erc20Token: transfer!.erc20Token! };
}

describe('chain data a hostile contract controls stops nobody', () => {
  test('a token whose name and symbol are 450 KB is named by their first characters, control characters removed', async () => {
    const { token, erc20Token } = await tokenAsNotified(HugeNameToken.bytecode);
    expect(erc20Token).toMatchObject({ name: 'A'.repeat(TOKEN_NAME_MAX_CHARS), symbol: '', decimals: 18 });
    expect(await getTokenMetadata(CHAIN_ID, token)).toEqual({ name: 'A'.repeat(TOKEN_NAME_MAX_CHARS), symbol: '', decimals: 18 });
  }, 60_000);

  test('a token whose name() reverts has an unknown name, and its symbol', async () => {
    const { erc20Token } = await tokenAsNotified(RevertingNameToken.bytecode);
    expect(erc20Token).toMatchObject({ name: '', symbol: 'RVT', decimals: 18 });
  }, 60_000);

  test('a token answering bytes that are not UTF-8 is named with U+FFFD in their place, control characters removed', async () => {
    const { erc20Token } = await tokenAsNotified(BadUtf8Token.bytecode);
    expect(erc20Token).toMatchObject({ name: '\uFFFDBad\uFFFDName\uFFFD', symbol: '\uFFFD(BAD[31m', decimals: 255 });
  }, 60_000);

  test('a transaction with 5 000 logs is notified with the first logs that fit, saying how many were left out, in the delivery log too', async () => {
    const from = await chain.fundedAddress();
    const flood = await deploy(from, LogFlood.bytecode);
    const { receiver, key, webhook } = await watch([flood], { includeLogs: true });
    const data = encodeFunctionData({ abi: LogFlood.abi, functionName: 'flood', args: [5000n] });
    const receipt = await chain.send({ from, to: flood, data });
    expect(receipt.logs).toHaveLength(5000);
    await anotherAccountIsNotifiedAfter(receipt.blockNumber, chain);
    // The contract's deployment may be notified too (its created contract is watched), if the follower had not taken it yet.
    let request: ReceivedRequest | undefined;
    for (let count = 1; !request; count += 1) {
      request = (await receiver.waitFor(count)).find((received) => notificationOf(received).event.transaction.txHash === receipt.transactionHash);
    }
    const { event, messageId } = notificationOf(request);
    const kept = event.logs!.length;
    expect(kept).toBeGreaterThan(100);
    expect(kept).toBeLessThan(5000);
    expect(event.omitted).toEqual({ logs: 5000 - kept });
    expect(event.logs!.map((log) => log.logIndex)).toEqual(Array.from({ length: kept }, (_, index) => index));
    // The whole transaction would not have fitted: more than the store holds even gzipped.
    expect(Buffer.byteLength(request.body) * (5000 / kept)).toBeGreaterThan(MAX_STORED_BODY_BYTES * 4);
    const logged = await client.call('GET', `/v1/webhooks/${webhook.id}/deliveries/${messageId}`, { key });
    expect(JSON.parse(logged.body.body).event.omitted).toEqual({ logs: 5000 - kept });
  }, 120_000);
});
