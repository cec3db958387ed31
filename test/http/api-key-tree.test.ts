import { getAccountKeyCount } from '../../lib/store/api-keys';
import { randomAccount } from '../support/factories';
import { useLocalService } from '../support/local-service';
import { apiKeysApi } from './support/api-keys-api';
import { expectError } from './support/expectations';

// The authorizer's cache is off in the test service: a revoked key is refused at once.
const client = useLocalService({ MAX_API_KEY_CREATIONS_PER_MINUTE: '1000' });
const { list, create, revoke, created } = apiKeysApi(client);

interface ListedKey {
  keyId: string;
  revokedAt?: number;
  createdBy?: string;
}

async function listed(key: string): Promise<Map<string, ListedKey>> {
  const response = await list(key, '?pageSize=100');
  expect(response.status).toBe(200);
  return new Map((response.body.apiKeys as ListedKey[]).map((entry) => [entry.keyId, entry]));
}

/** An account whose operator's key (the keys CLI's) made A and S; A made B, and B made C. */
async function keyTree() {
  const account = randomAccount();
  const operator = await client.keyFor(account);
  const a = await created(operator);
  const b = await created(a.key);
  const c = await created(b.key);
  const s = await created(operator);
  return { account, operator, a, b, c, s };
}

const works = async (key: string) => (await list(key)).status === 200;

describe('a key and the keys it made', () => {
  it('records which key made each key, and shows it as createdBy', async () => {
    const { operator, a, b, c } = await keyTree();
    const keys = await listed(operator);
    const operatorId = [...keys.values()].find((entry) => entry.createdBy === undefined)!.keyId;
    expect(keys.get(a.keyId)!.createdBy).toBe(operatorId);
    expect(keys.get(b.keyId)!.createdBy).toBe(a.keyId);
    expect(keys.get(c.keyId)!.createdBy).toBe(b.keyId);
    expect(keys.get(operatorId)).not.toHaveProperty('createdBy');
  });

  it('revoking A revokes B, which A made, and C, which B made: each is refused; the other keys keep working', async () => {
    const { account, operator, a, b, c, s } = await keyTree();
    const response = await revoke(operator, a.keyId);
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ keyId: a.keyId, revokedAt: expect.any(Number) });
    for (const key of [a, b, c]) {
      expectError(await list(key.key), 401);
      expectError(await create(key.key), 401);
    }
    expect(await works(operator)).toBe(true);
    expect(await works(s.key)).toBe(true);
    const keys = await listed(operator);
    for (const key of [a, b, c]) expect(keys.get(key.keyId)!.revokedAt).toEqual(expect.any(Number));
    expect(keys.get(s.keyId)!.revokedAt).toBeUndefined();
    expect(await getAccountKeyCount(account)).toMatchObject({ activeKeys: 2, revocationsUnderWay: [] });
  });

  it('revoking a key of the tree leaves the keys above it working', async () => {
    const { operator, a, b, c } = await keyTree();
    expect((await revoke(a.key, b.keyId)).status).toBe(200);
    expect(await works(a.key)).toBe(true);
    expect(await works(operator)).toBe(true);
    expectError(await list(c.key), 401);
  });

  it('a key revoking itself revokes the keys it made', async () => {
    const { operator, a, b, c } = await keyTree();
    expect((await revoke(a.key, a.keyId)).status).toBe(200);
    expectError(await list(b.key), 401);
    expectError(await list(c.key), 401);
    expect(await works(operator)).toBe(true);
  });

  it('answers 409 when a key and the keys it made are all the keys of the account not revoked, and revokes none', async () => {
    const account = randomAccount();
    const operator = await client.keyFor(account);
    const a = await created(operator);
    const b = await created(a.key);
    const operatorId = [...(await listed(operator)).values()].find((entry) => entry.createdBy === undefined)!.keyId;
    expect(expectError(await revoke(operator, operatorId), 409)).toMatch(`API key ${operatorId} and the keys made with it are the account's last keys that are not revoked`);
    for (const key of [operator, a.key, b.key]) expect(await works(key)).toBe(true);
    expect(await getAccountKeyCount(account)).toMatchObject({ activeKeys: 3, revocationsUnderWay: [] });
  });
});

describe('which key may revoke which', () => {
  it.each([
    ['the key that made it', 'b', 'a'],
    ['a key its maker made', 's', 'a'],
    ['a key two levels up', 'c', 'a'],
    ["the operator's key", 'a', 'operator'],
  ] as const)('answers 403 to a key revoking %s, and revokes nothing', async (_, caller, target) => {
    const tree = await keyTree();
    const keys = await listed(tree.operator);
    const operatorId = [...keys.values()].find((entry) => entry.createdBy === undefined)!.keyId;
    const keyOf = (name: typeof caller | typeof target) => (name === 'operator' ? { key: tree.operator, keyId: operatorId } : tree[name]);
    const message = expectError(await revoke(keyOf(caller).key, keyOf(target).keyId), 403);
    expect(message).toBe(
      `API key ${keyOf(caller).keyId} may revoke only itself and the keys made with it (directly or through keys they made); ${keyOf(target).keyId} is not one of them: revoke it with a key it was made with, or the operator's keys CLI`,
    );
    for (const key of [tree.operator, tree.a.key, tree.b.key, tree.c.key, tree.s.key]) expect(await works(key)).toBe(true);
  });

  it('lets a key revoke a key made by a key it made', async () => {
    const { operator, a, c } = await keyTree();
    expect((await revoke(a.key, c.keyId)).status).toBe(200);
    expectError(await list(c.key), 401);
    expect(await works(operator)).toBe(true);
  });
});

describe('a revocation while the key makes keys', () => {
  it('leaves no key made by the revoked key working, whichever finished first', async () => {
    const { account, operator, a } = await keyTree();
    const making = Promise.all(Array.from({ length: 8 }, () => create(a.key)));
    const revoked = revoke(operator, a.keyId);
    const [made, revocation] = await Promise.all([making, revoked]);
    expect(revocation.status).toBe(200);
    for (const response of made) {
      expect([201, 401]).toContain(response.status);
      if (response.status === 201) expectError(await list(response.body.key), 401);
    }
    const keys = await listed(operator);
    expect([...keys.values()].filter((entry) => entry.revokedAt === undefined).map((entry) => entry.createdBy)).not.toContain(a.keyId);
    // The operator's key, and S.
    expect(await getAccountKeyCount(account)).toMatchObject({ activeKeys: 2, revocationsUnderWay: [] });
  });
});
