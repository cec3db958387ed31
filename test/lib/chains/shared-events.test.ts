import { Logger } from '@aws-lambda-powertools/logger';
import { encodeFunctionData } from 'viem';
import { LogFlood } from '../../../infra/dev-contracts.generated';
import { ChainFollower } from '../../../lib/chains/follower';
import * as oversized from '../../../lib/chains/oversized';
import { devChainSettings, encodeFollowedChains, FOLLOWED_CHAINS_VARIABLE, publicFactsOf } from '../../../lib/config/chains';
import { createWebhookBody } from '../../../lib/schemas/webhook';
import { queryMessages } from '../../../lib/store/messages';
import { createWebhook } from '../../../lib/webhooks/webhooks';
import { useDevChain } from '../../support/dev-chain';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount, webhookInput } from '../../support/factories';

const CHAIN_ID = '31381';
const chain = useDevChain(CHAIN_ID);
useEmbeddedStore({ [FOLLOWED_CHAINS_VARIABLE]: encodeFollowedChains([publicFactsOf(CHAIN_ID)]) });

async function stepUntilCaughtUp(follower: ChainFollower) {
  for (let steps = 0; !(await follower.step()).caughtUp; steps += 1) if (steps > 20) throw new Error('not caught up');
}

describe("one account's many webhooks on one transaction too large to store", () => {
  test('share its event: cut once per (includeLogs, includeInternalTxs), every webhook recorded with the same body apart from its ids', async () => {
    const log = new Logger({ logLevel: 'SILENT' });
    const warnings = jest.spyOn(log, 'warn');
    const follower = new ChainFollower({ ...devChainSettings(CHAIN_ID, chain.rpcUrl()), firstCheckpoint: undefined }, log);
    const from = await chain.fundedAddress();
    const flood = (await chain.send({ from, data: LogFlood.bytecode })).contractAddress as string;
    await stepUntilCaughtUp(follower);
    const account = randomAccount();
    const webhooks = [];
    for (let index = 0; index < 20; index += 1) {
      const input = webhookInput({ chainId: CHAIN_ID, metadata: { addresses: [flood] }, includeLogs: true, includeInternalTxs: index % 2 === 0 });
      webhooks.push(await createWebhook(account, createWebhookBody.parse(input)));
    }
    const cuts = jest.spyOn(oversized, 'fittedEvent');
    try {
      await chain.send({ from, to: flood, data: encodeFunctionData({ abi: LogFlood.abi, functionName: 'flood', args: [3000n] }) });
      await stepUntilCaughtUp(follower);
      expect(cuts).toHaveBeenCalledTimes(2);
      expect(warnings.mock.calls.filter(([message]) => message === 'notification too large to store whole, recorded cut')).toHaveLength(2);
    } finally {
      cuts.mockRestore();
    }
    const bodies = await Promise.all(
      webhooks.map(async (webhook) => {
        const messages = await queryMessages({ account, webhookId: webhook.id, limit: 10 });
        expect(messages).toHaveLength(1);
        const { event, webhookId, messageId } = JSON.parse(messages[0]!.body);
        expect(webhookId).toBe(webhook.id);
        expect(messageId).toBe(messages[0]!.messageId);
        return { includeInternalTxs: webhook.includeInternalTxs, event };
      }),
    );
    for (const variant of [true, false]) {
      const events = bodies.filter((body) => body.includeInternalTxs === variant).map((body) => body.event);
      expect(events).toHaveLength(10);
      expect(events[0].omitted.logs).toBeGreaterThan(0);
      expect(events[0].transaction.internalTransactions !== undefined).toBe(variant);
      for (const event of events) expect(event).toEqual(events[0]);
    }
  }, 120_000);
});
