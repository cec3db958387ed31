import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fittedEvent } from '../../../lib/chains/oversized';
import { addressActivityEvent, type AddressActivityEvent } from '../../../lib/schemas/notification';
import { isStorableBody } from '../../../lib/store/messages';

const hosted = JSON.parse(readFileSync(path.join(__dirname, '../../fixtures/hosted-address-activity-example.json'), 'utf8'));
const example = addressActivityEvent.parse(hosted.event);
const fits = (event: AddressActivityEvent) => isStorableBody(JSON.stringify(event));
const randomHex = (bytes: number) => `0x${randomBytes(bytes).toString('hex')}`;

/** The example with `count` logs of random data: about 150 bytes each, gzipped. */
function withLogs(count: number, transaction = example.transaction): AddressActivityEvent {
  const log = example.logs![0]!;
  return { transaction, logs: Array.from({ length: count }, (_, logIndex) => ({ ...log, data: randomHex(96), logIndex })) };
}

test('too many logs: the first ones that fit are kept, and how many were left out is said', () => {
  const event = withLogs(5000);
  expect(fits(event)).toBe(false);
  const fitted = fittedEvent(event, fits);
  const kept = fitted.logs!.length;
  expect(fits(fitted)).toBe(true);
  expect(fits({ ...event, logs: event.logs!.slice(0, kept + 1), omitted: { logs: 5000 - kept - 1 } })).toBe(false);
  expect(fitted).toEqual({ transaction: event.transaction, logs: event.logs!.slice(0, kept), omitted: { logs: 5000 - kept } });
  expect(addressActivityEvent.parse(fitted)).toEqual(fitted);
});

test('a transaction too large alone: every list emptied and the input cut, each counted in omitted', () => {
  const transfer = example.transaction.erc20Transfers[0]!;
  const transaction = {
    ...example.transaction,
    input: randomHex(400_000),
    erc20Transfers: Array.from({ length: 3000 }, () => ({ ...transfer, value: BigInt(randomHex(16)).toString() })),
  };
  const event = withLogs(20, transaction);
  const fitted = fittedEvent(event, fits);
  expect(fits(fitted)).toBe(true);
  expect(fitted.transaction).toEqual({ ...transaction, input: '0x', erc20Transfers: [], erc721Transfers: [], erc1155Transfers: [], internalTransactions: [] });
  expect(fitted.logs).toEqual([]);
  expect(fitted.omitted).toEqual({ logs: 20, erc20Transfers: 3000, internalTransactions: transaction.internalTransactions!.length, inputBytes: 400_000 });
  expect(addressActivityEvent.parse(fitted)).toEqual(fitted);
});
