import { coalescingReader, readEventuallyConsistent, writeItems, type ItemReader } from '../../../lib/store/batch';
import { dynamoDb } from '../../../lib/store/client';
import type { TableKey } from '../../../lib/store/table';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount } from '../../support/factories';

useEmbeddedStore();

const batchGets: number[] = [];

beforeAll(() => {
  dynamoDb().middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'BatchGetItemCommand') {
        batchGets.push(Object.values((args.input as { RequestItems: Record<string, { Keys: unknown[] }> }).RequestItems)[0]!.Keys.length);
      }
      return next(args);
    },
    { step: 'initialize', name: 'coalescingReaderTest' },
  );
});

async function stored(count: number): Promise<TableKey[]> {
  const pk = `TEST#${randomAccount()}`;
  const keys = Array.from({ length: count }, (_, index) => ({ pk, sk: `ITEM#${index}` }));
  await writeItems(keys.map((key, index) => ({ put: { ...key, value: index } })));
  return keys;
}

it('reads the calls of one turn in one request, each distinct key once, and gives each call its own items', async () => {
  const [a, b, c, missing] = await stored(4);
  await writeItems([{ delete: missing! }]);
  const read = coalescingReader();
  batchGets.length = 0;
  const [first, second, third] = await Promise.all([read([a!, b!]), read([b!, c!]), read([missing!, a!])]);
  expect(batchGets).toEqual([4]);
  expect(first.map((item) => item.value).sort()).toEqual([0, 1]);
  expect(second.map((item) => item.value).sort()).toEqual([1, 2]);
  expect(third.map((item) => item.value)).toEqual([0]);
  // A later turn is a request of its own.
  expect((await read([c!])).map((item) => item.value)).toEqual([2]);
  expect(batchGets).toEqual([4, 1]);
});

it("reads each call on its own when the shared read fails, so that one call's fault stays its own", async () => {
  const [good, bad] = await stored(2);
  // A key the store refuses (as a malformed one would be): a fault the embedded store cannot be made to produce for one request.
  const refusing: ItemReader = async (keys) => {
    if (keys.some((key) => key.sk === bad!.sk)) throw Object.assign(new Error('refused'), { name: 'ValidationException' });
    return readEventuallyConsistent(keys);
  };
  const read = coalescingReader(refusing);
  const [ok, refused] = await Promise.allSettled([read([good!]), read([bad!])]);
  expect(ok).toEqual({ status: 'fulfilled', value: [expect.objectContaining({ value: 0 })] });
  expect(refused).toMatchObject({ status: 'rejected', reason: { name: 'ValidationException' } });
  await expect(read([bad!])).rejects.toMatchObject({ name: 'ValidationException' });
});
