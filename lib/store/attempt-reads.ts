/** What an attempt of a message reads at once: the message's state, its webhook, the account's secrets, its body and its endpoint's health. */
import type { SigningSecrets } from '../deliveries/signing';
import type { Webhook } from '../schemas/webhook';
import { keyText, type ItemReader } from './batch';
import { toEndpointHealth, type EndpointHealth } from './endpoint-health';
import type { Item } from './items';
import { bodyKeyOf, getMessageState, type MessageRef, type MessageState } from './messages';
import { signingSecretsOf } from './shared-secrets';
import { endpointHealthKey, sharedSecretKey, webhookKey } from './table';
import { toWebhook } from './webhooks';

export interface AttemptReads {
  message?: MessageState;
  webhook?: Webhook;
  secrets?: SigningSecrets;
  /** The body's item, for withBody: absent when it was not seen yet. */
  body?: Item;
  /** The health of the endpoint `ref.origin` names; absent when it names none. */
  endpoint?: EndpointHealth;
}

/**
 * The message's state strongly consistent: its claim is conditioned on what is read of it. The
 * account's items, read with every notification of the account, with `read`: eventually consistent,
 * a moment old at most (what that allows: docs/delivery-scale.md), at half the read units of items
 * that would be hot, and once for all the records of a batch that ask for them. The body too,
 * written once before the state: read again by withBody if not seen yet. The secrets as they sign at
 * `now`, after a rotation's `graceSeconds`.
 */
export async function readForAttempt(ref: MessageRef & { origin?: string }, read: ItemReader, graceSeconds: number, now: number): Promise<AttemptReads> {
  const keys = [webhookKey(ref.account, ref.webhookId), sharedSecretKey(ref.account), bodyKeyOf(ref)];
  if (ref.origin) keys.push(endpointHealthKey(ref.account, ref.origin));
  const [message, items] = await Promise.all([getMessageState(ref), read(keys)]);
  const byKey = new Map(items.map((item) => [keyText(item), item]));
  const [webhookItem, secretItem, body, endpointItem] = keys.map((key) => byKey.get(keyText(key)));
  return {
    message,
    webhook: webhookItem && toWebhook(webhookItem),
    secrets: signingSecretsOf(secretItem, graceSeconds, now),
    body,
    endpoint: ref.origin ? toEndpointHealth(endpointItem) : undefined,
  };
}
