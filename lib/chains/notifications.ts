/**
 * The notifications of a run of blocks for the webhooks they match. A transaction's event is built
 * once per (includeLogs, includeInternalTxs), and cut to fit once when too large to store
 * (docs/chain-follower.md): one account's thousand webhooks on one huge transaction cost one event
 * and one cut, not a thousand, and, being handed the same object, one serialisation and one gzip
 * (lib/deliveries/messages.ts).
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { ChainSettings } from '../config/chains';
import type { Notification } from '../deliveries/messages';
import type { AddressActivityEvent } from '../schemas/notification';
import { deterministicUuid } from '../uuid';
import type { WebhookMatch } from './matcher';
import { fittedEvent } from './oversized';
import { buildAddressActivityEvent, type TokenMetadataLookup } from './payload';
import type { BlockData } from './rpc-types';

type Fitted = NonNullable<Notification['fitted']>;

/** The webhooks of a run of blocks whose notifications could not be recorded; the others' were. */
export class WebhooksFailed extends Error {
  override readonly name = 'WebhooksFailed';

  constructor(readonly failures: { data: BlockData; match: WebhookMatch; error: unknown }[], transient: (error: unknown) => boolean) {
    // The cause: a failure that asking again may fix when there is one, so that the step is asked again.
    const cause = (failures.find(({ error }) => transient(error)) ?? failures[0]!).error;
    super(`notifications of ${failures.length} webhook(s) not recorded: ${cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause)}`, { cause });
  }
}

interface SharedEvent {
  event: AddressActivityEvent;
  fitted: Fitted;
}

export class BlockNotifications {
  private readonly events = new Map<string, SharedEvent>();

  constructor(
    private readonly chain: ChainSettings,
    private readonly tokens: TokenMetadataLookup,
    private readonly log: Logger,
  ) {}

  /** The webhook's notifications of the block: one per transaction it matched. */
  of(data: BlockData, { webhook, transactionIndexes }: WebhookMatch): Notification[] {
    const blockTimeMs = Number(data.block.timestamp) * 1000;
    return transactionIndexes.map((transactionIndex) => {
      const { event, fitted } = this.shared(data, transactionIndex, webhook.includeLogs, webhook.includeInternalTxs);
      const txHash = data.block.transactions[transactionIndex]!.hash;
      const messageId = deterministicUuid(blockTimeMs, [webhook.id, this.chain.chainId, data.block.hash, txHash]);
      return { eventType: webhook.eventType, event, messageId, fitted };
    });
  }

  private shared(data: BlockData, transactionIndex: number, includeLogs: boolean, includeInternalTxs: boolean): SharedEvent {
    const key = `${data.block.hash}/${transactionIndex}/${includeLogs}/${includeInternalTxs}`;
    let shared = this.events.get(key);
    if (!shared) {
      const { chainId, networkToken } = this.chain;
      const event = buildAddressActivityEvent({ chainId, data, transactionIndex, tokens: this.tokens, networkToken, includeLogs, includeInternalTxs });
      shared = { event, fitted: this.fittedOnce(event) };
      this.events.set(key, shared);
    }
    return shared;
  }

  /** The event, or its cut when it does not fit: found for the first webhook, the same for the others (their envelopes differ only in ids). */
  private fittedOnce(event: AddressActivityEvent): Fitted {
    let recorded: AddressActivityEvent | undefined;
    return (fits) => {
      if (recorded) return recorded;
      recorded = fits(event) ? event : fittedEvent(event, fits);
      if (recorded !== event) {
        const { blockNumber, txHash } = event.transaction;
        this.log.warn('notification too large to store whole, recorded cut', {
          chainId: this.chain.chainId,
          block: Number(blockNumber),
          txHash,
          bytes: Buffer.byteLength(JSON.stringify(event)),
          recordedBytes: Buffer.byteLength(JSON.stringify(recorded)),
          omitted: recorded.omitted,
        });
      }
      return recorded;
    };
  }
}
