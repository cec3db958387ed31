/**
 * Leases: a claim on a piece of work that runs out, so that a process that dies holding one stops
 * holding it when it expires. The leases on a piece of work (a chain's follower and backfill runner, a
 * webhook's address change, a purge job) are taken, renewed and released by the writes built here;
 * delivery's slots and endpoint probes (attempt-slots.ts, endpoint-health.ts) are counted capacity,
 * kept apart.
 */
import { tableName } from './client';
import { conditionHeld, unlessConditionFails } from './conditional-write';
import { putItem, updateItem, type Item } from './items';
import type { TableKey } from './table';

/**
 * Where a lease is kept: the attributes (paths) of its holder and its expiry, in the item at `key`.
 * A lease in `its own item` is written whole (PutItem); one kept `in` an existing item (the
 * webhook's, a purge job's) is updated there, and only while that item exists. When the holder and
 * the expiry are one attribute, the expiry a holder was given is what names it.
 */
export interface LeaseSite {
  key: TableKey;
  holder: string;
  expiresAt: string;
  kept: 'its own item' | 'in an item';
}

/** An update or condition expression with the names and values it uses. */
interface Expression {
  text: string;
  names: Record<string, string>;
  values: Item;
}

/** `#part.#part` for an attribute path, with the names it needs added to `names`. */
function pathOf(path: string, names: Record<string, string>): string {
  return path
    .split('.')
    .map((part) => {
      names[`#${part}`] = part;
      return `#${part}`;
    })
    .join('.');
}

const topAttributeOf = (path: string) => path.split('.')[0]!;

/** The lease's attributes as they are written, by top-level attribute: `{ addressLease: { id, expiresAt } }`, `{ holder, until }`. */
function leaseAttributes(site: LeaseSite, holder: string | number, expiresAt: number): Item {
  const attributes: Item = {};
  for (const [path, value] of [
    [site.holder, holder],
    [site.expiresAt, expiresAt],
  ] as const) {
    const parts = path.split('.');
    let target = attributes;
    for (const part of parts.slice(0, -1)) target = target[part] ??= {};
    target[parts.at(-1)!] = value;
  }
  return attributes;
}

/** The lease is `holder`'s. */
export function leaseHeldBy(site: LeaseSite, holder: string | number): Expression {
  const names = {};
  return { text: `${pathOf(site.holder, names)} = :leaseHolder`, names, values: { ':leaseHolder': holder } };
}

/** The update that gives an `in an item` lease up, for a write that does more under leaseHeldBy. */
export function leaseRemoval(site: LeaseSite): Expression {
  const names = {};
  return { text: `REMOVE ${pathOf(topAttributeOf(site.expiresAt), names)}`, names, values: {} };
}

/**
 * Takes the lease for `holder` until `expiresAt` (ms) when nobody holds it, it has run out, or it is
 * already this holder's (renewed by taking it again; not where the expiry names the holder). Returns
 * the item as the write left it; undefined when another holder has the lease, or the item it is
 * kept in does not exist.
 */
export async function takeLease(site: LeaseSite, holder: string | number, expiresAt: number, now: number): Promise<Item | undefined> {
  const names: Record<string, string> = {};
  const values: Item = { ':now': now };
  const free = [
    site.kept === 'its own item' ? 'attribute_not_exists(pk)' : `attribute_not_exists(${pathOf(topAttributeOf(site.expiresAt), names)})`,
    `${pathOf(site.expiresAt, names)} < :now`,
  ];
  if (site.holder !== site.expiresAt) {
    const held = leaseHeldBy(site, holder);
    free.push(held.text);
    Object.assign(names, held.names);
    Object.assign(values, held.values);
  }
  const attributes = leaseAttributes(site, holder, expiresAt);
  if (site.kept === 'its own item') {
    const item = { ...site.key, ...attributes };
    const taken = await conditionHeld(
      putItem({ TableName: tableName(), Item: item, ConditionExpression: free.join(' OR '), ExpressionAttributeNames: names, ExpressionAttributeValues: values }),
    );
    return taken ? item : undefined;
  }
  const assignments = Object.entries(attributes).map(([attribute, value]) => {
    values[`:${attribute}`] = value;
    return `${pathOf(attribute, names)} = :${attribute}`;
  });
  return unlessConditionFails(
    updateItem({
      TableName: tableName(),
      Key: site.key,
      UpdateExpression: `SET ${assignments.join(', ')}`,
      ConditionExpression: `attribute_exists(pk) AND (${free.join(' OR ')})`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ReturnValues: 'ALL_NEW',
    }),
  );
}

/**
 * Moves the expiry of a lease kept `in an item` to `expiresAt`; false when it is no longer `holder`'s
 * (taken over, or the item deleted). A lease in its own item is renewed by taking it again.
 */
export async function renewLease(site: LeaseSite, holder: string | number, expiresAt: number): Promise<boolean> {
  if (site.kept === 'its own item') throw new Error('A lease in its own item is renewed by takeLease');
  const held = leaseHeldBy(site, holder);
  const names = { ...held.names };
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: site.key,
      UpdateExpression: `SET ${pathOf(site.expiresAt, names)} = :leaseExpiresAt`,
      ConditionExpression: held.text,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: { ...held.values, ':leaseExpiresAt': expiresAt },
    }),
  );
}

/** Gives the lease up, if it is still `holder`'s, so that the next holder need not wait for it to run out. */
export async function releaseLease(site: LeaseSite, holder: string | number): Promise<boolean> {
  const held = leaseHeldBy(site, holder);
  if (site.kept === 'its own item') {
    return conditionHeld(
      putItem({
        TableName: tableName(),
        Item: { ...site.key, ...leaseAttributes(site, '', 0) },
        ConditionExpression: held.text,
        ExpressionAttributeNames: held.names,
        ExpressionAttributeValues: held.values,
      }),
    );
  }
  const removal = leaseRemoval(site);
  return conditionHeld(
    updateItem({
      TableName: tableName(),
      Key: site.key,
      UpdateExpression: removal.text,
      ConditionExpression: held.text,
      ExpressionAttributeNames: { ...held.names, ...removal.names },
      ExpressionAttributeValues: held.values,
    }),
  );
}
