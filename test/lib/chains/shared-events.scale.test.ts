import { Logger } from '@aws-lambda-powertools/logger';
import { encodeFunctionData } from 'viem';
import { LogFlood } from '../../../infra/dev-contracts.generated';
import { ChainFollower } from '../../../lib/chains/follower';
import * as oversized from '../../../lib/chains/oversized';
import { devChainSettings, encodeFollowedChains, FOLLOWED_CHAINS_VARIABLE, publicFactsOf } from '../../../lib/config/chains';
import * as signing from '../../../lib/deliveries/signing';
import { generateOrRotateSharedSecret } from '../../../lib/secrets/shared-secret';
import { createWebhookBody } from '../../../lib/schemas/webhook';
import { recordedMessages } from '../../support/recorded-messages';
import { createWebhook } from '../../../lib/webhooks/webhooks';
import { useDevChain } from '../../support/dev-chain';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount, webhookInput } from '../../support/factories';
// The module object itself (not a namespace copy), so that the store's calls are spied on.
import zlib = require('node:zlib');
import { startReceiver, type Receiver } from '../../support/receiver';
import { NO_QUEUE } from '../../../lib/deliveries/queue';
import { deliverNow } from '../../support/queue-records';

const CHAIN_ID = '31381';
const chain = useDevChain(CHAIN_ID);
useEmbeddedStore({ [FOLLOWED_CHAINS_VARIABLE]: encodeFollowedChains([publicFactsOf(CHAIN_ID)]) });

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

async function stepUntilCaughtUp(follower: ChainFollower) {
  for (let steps = 0; !(await follower.step()).caughtUp; steps += 1) if (steps > 20) throw new Error('not caught up');
}

describe("one account's many webhooks on one transaction too large to store", () => {
  test('share its event: cut, serialised and compressed once per (includeLogs, includeInternalTxs), every webhook recorded with the same body apart from its ids', async () => {
    const log = new Logger({ logLevel: 'SILENT' });
    const warnings = jest.spyOn(log, 'warn');
    const follower = new ChainFollower({ ...devChainSettings(CHAIN_ID, chain.rpcUrl()), firstCheckpoint: undefined }, log, NO_QUEUE);
    const from = await chain.fundedAddress();
    const flood = (await chain.send({ from, data: LogFlood.bytecode })).contractAddress as string;
    await stepUntilCaughtUp(follower);
    const account = randomAccount();
    const { secret } = await generateOrRotateSharedSecret(account);
    const webhooks = [];
    for (let index = 0; index < 20; index += 1) {
      const input = webhookInput({ url: receiver.url, chainId: CHAIN_ID, metadata: { addresses: [flood] }, includeLogs: true, includeInternalTxs: index % 2 === 0 });
      webhooks.push(await createWebhook(account, createWebhookBody.parse(input)));
    }
    const cuts = jest.spyOn(oversized, 'fittedEvent');
    const serialisations = jest.spyOn(signing, 'canonicalJson');
    const gzips = jest.spyOn(zlib, 'deflateRawSync');
    let serialised: unknown[], gzipped: unknown[];
    try {
      await chain.send({ from, to: flood, data: encodeFunctionData({ abi: LogFlood.abi, functionName: 'flood', args: [3000n] }) });
      await stepUntilCaughtUp(follower);
      expect(cuts).toHaveBeenCalledTimes(2);
      expect(warnings.mock.calls.filter(([message]) => message === 'notification too large to store whole, recorded cut')).toHaveLength(2);
      serialised = serialisations.mock.results.map(({ value }) => value);
      gzipped = gzips.mock.calls.map(([input]) => input);
    } finally {
      cuts.mockRestore();
      serialisations.mockRestore();
      gzips.mockRestore();
    }
    const bodies = await Promise.all(
      webhooks.map(async (webhook) => {
        const messages = await recordedMessages(account, webhook.id, 10);
        expect(messages).toHaveLength(1);
        const { body, messageId } = messages[0]!;
        const { event, webhookId, eventType } = JSON.parse(body);
        expect(webhookId).toBe(webhook.id);
        expect(messageId).toBe(messages[0]!.messageId);
        expect(body).toBe(signing.canonicalBody({ webhookId, eventType, messageId, event }));
        const { before, after } = signing.envelopeAround({ webhookId, eventType, messageId });
        const eventText = body.slice(before.length, body.length - after.length);
        expect(before + eventText + after).toBe(body);
        return { includeInternalTxs: webhook.includeInternalTxs, body, event, eventText, ref: { account, webhookId, messageId } };
      }),
    );
    for (const variant of [true, false]) {
      const recorded = bodies.filter((body) => body.includeInternalTxs === variant);
      const events = recorded.map((body) => body.event);
      expect(events).toHaveLength(10);
      expect(events[0].omitted.logs).toBeGreaterThan(0);
      expect(events[0].transaction.internalTransactions !== undefined).toBe(variant);
      for (const event of events) expect(event).toEqual(events[0]);
      const { body, eventText, ref } = recorded[0]!;
      expect(serialised.filter((text) => text === eventText)).toHaveLength(1);
      expect(gzipped.filter((input) => input === eventText)).toHaveLength(1);
      await deliverNow(ref);
      const [request] = receiver.requests.filter((received) => JSON.parse(received.body).messageId === ref.messageId);
      expect(request!.body).toBe(body);
      expect(signing.verifyNotification({ rawBody: request!.body, headers: request!.headers as Record<string, string>, secret })).toMatchObject({
        xSignature: true,
        standardWebhooks: true,
      });
    }
  }, 120_000);
});
