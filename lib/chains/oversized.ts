/**
 * The rule for an `address_activity` notification too large to store whole (docs/chain-follower.md):
 * its logs are cut, keeping the first ones that fit; if the transaction alone is still too large,
 * every list in it is emptied and its input cut. `omitted` says what was left out, so that the
 * receiver sees it in the notification and the operator in the delivery log.
 */
import type { AddressActivityEvent, AddressActivityTransaction, OmittedParts } from '../schemas/notification';

type Fits = (event: AddressActivityEvent) => boolean;

const LISTS = ['erc20Transfers', 'erc721Transfers', 'erc1155Transfers', 'internalTransactions', 'accessList'] as const;

/** The event as recorded in place of one that does not fit: see the file's comment. */
export function fittedEvent(event: AddressActivityEvent, fits: Fits): AddressActivityEvent {
  const logs = event.logs ?? [];
  // The same object for the same count: the one recorded is the one `fits` measured, whose serialisation is kept with it.
  const tried = new Map<number, AddressActivityEvent>();
  const withLogs = (kept: number): AddressActivityEvent => {
    if (kept === logs.length) return event;
    let cut = tried.get(kept);
    if (!cut) tried.set(kept, (cut = { ...event, logs: logs.slice(0, kept), omitted: { ...event.omitted, logs: logs.length - kept } }));
    return cut;
  };
  if (logs.length > 0 && fits(withLogs(0))) {
    // The most logs that fit: `low` fits, `high` does not.
    let [low, high] = [0, logs.length];
    while (high - low > 1) {
      const middle = Math.floor((low + high) / 2);
      if (fits(withLogs(middle))) low = middle;
      else high = middle;
    }
    return withLogs(low);
  }
  return summary(event);
}

/** The transaction's scalar fields, with every list emptied and the input cut: a few KB whatever the transaction. */
function summary(event: AddressActivityEvent): AddressActivityEvent {
  const omitted: OmittedParts = { ...event.omitted };
  const transaction: AddressActivityTransaction = { ...event.transaction, input: '0x' };
  for (const list of LISTS) {
    const items = event.transaction[list];
    if (!items) continue;
    if (items.length > 0) omitted[list] = items.length;
    transaction[list] = [];
  }
  const inputBytes = (event.transaction.input.length - 2) / 2;
  if (inputBytes > 0) omitted.inputBytes = inputBytes;
  if (event.logs?.length) omitted.logs = event.logs.length;
  return { transaction, ...(event.logs ? { logs: [] } : {}), omitted };
}
