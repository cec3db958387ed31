import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { handler as rotateHandler } from '../../functions/generate-or-rotate-shared-secret';
import { handler as revokeHandler } from '../../functions/revoke-api-key';
import { createAccountApiKey, revokeAccountApiKey } from '../../lib/keys/account-api-keys';
import { createApiKey, hashApiKey, resolveApiKey } from '../../lib/keys/api-keys';
import { startTreeRevocation } from '../../lib/limits/api-keys';
import { getAccountKeyCount } from '../../lib/store/api-keys';
import { dynamoDb, tableName } from '../../lib/store/client';
import { deleteItem, getItem, updateItem } from '../../lib/store/items';
import { accountKey, apiKeyIdKey, sharedSecretKey } from '../../lib/store/table';
import { useEmbeddedStore } from '../support/embedded-store';
import { apiEvent, randomAccount } from '../support/factories';

// Creations per minute are not what this file tests.
useEmbeddedStore({ MAX_API_KEY_CREATIONS_PER_MINUTE: '1000' });
const context = {} as Context;

/** The store's reads, from before the client's first call of each command (it resolves its middleware once per command). */
const reads: { command: string; sortKey?: string; index?: string }[] = [];
/** While set, the store fails the write that marks a key revoked: a revocation cut off after the account recorded it. */
let failRevokedMark = false;
beforeAll(() => {
  dynamoDb().middlewareStack.add(
    (next, { commandName = '' }) =>
      async (args) => {
        const input = args.input as { Key?: { sk?: { S?: string } }; IndexName?: string; UpdateExpression?: string };
        if (failRevokedMark && input.UpdateExpression?.startsWith('SET revokedAt')) throw Object.assign(new Error('store unavailable'), { name: 'ServiceUnavailable' });
        if (['GetItemCommand', 'BatchGetItemCommand', 'QueryCommand', 'ScanCommand'].includes(commandName)) {
          reads.push({ command: commandName.replace(/Command$/, ''), sortKey: input.Key?.sk?.S, index: input.IndexName });
        }
        return next(args);
      },
    { step: 'initialize', name: 'keyRevocationReads' },
  );
});

/** A call of an operation's handler as the gateway makes it once the authorizer let `callerKeyId` in (its cache may be a minute old). */
async function callAs(
  handler: (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>,
  account: string,
  callerKeyId: string,
  options: { method: string; pathParameters?: Record<string, string> },
) {
  const event = apiEvent({ account, ...options });
  (event.requestContext.authorizer as Record<string, string>).keyId = callerKeyId;
  const response = await handler(event, context);
  return { status: response.statusCode, body: JSON.parse(response.body) };
}

const rotate = (account: string, callerKeyId: string) => callAs(rotateHandler, account, callerKeyId, { method: 'POST' });
const revoke = (account: string, callerKeyId: string, keyId: string) => callAs(revokeHandler, account, callerKeyId, { method: 'DELETE', pathParameters: { keyId } });

const secretOf = async (account: string) => (await getItem({ TableName: tableName(), Key: sharedSecretKey(account), ConsistentRead: true }))?.currentSecret;

/** An account whose operator's key made A, and A made B. */
async function keyChain() {
  const account = randomAccount();
  const made = await createApiKey(account);
  const operator = made.record;
  const a = await createAccountApiKey(account, operator.keyId);
  const b = await createAccountApiKey(account, a.keyId);
  return { account, operator, operatorKey: made.key, a, b };
}

describe('the shared secret rotated with a key revoked a moment ago', () => {
  it('answers 401 to the revoked key and to a key it made, rotating nothing; the other key rotates', async () => {
    const { account, operator, a, b } = await keyChain();
    expect((await rotate(account, operator.keyId)).status).toBe(201);
    const before = await secretOf(account);
    await revokeAccountApiKey(account, operator.keyId, a.keyId);

    for (const keyId of [a.keyId, b.keyId]) {
      expect(await rotate(account, keyId)).toEqual({ status: 401, body: { message: expect.any(String), statusCode: 401, error: 'Unauthorized' } });
    }
    expect(await secretOf(account)).toBe(before);
    expect((await rotate(account, operator.keyId)).status).toBe(201);
  });

  it('answers 401 to a key whose revocation was cut off after its first write (recorded, the key not yet marked)', async () => {
    const { account, operator, a, b } = await keyChain();
    await startTreeRevocation(account, hashApiKey(a.key), [{ keyId: a.keyId, keyHash: hashApiKey(a.key) }], { keepLast: true });
    expect((await rotate(account, a.keyId)).status).toBe(401);
    expect((await rotate(account, b.keyId)).status).toBe(401);
    expect((await rotate(account, operator.keyId)).status).toBe(201);
  });
});

describe('a revocation cut off before its root is marked revoked', () => {
  it('leaves the root and every key it made refused by the authorizer, and the next key operation finishes it', async () => {
    const { account, operator, operatorKey, a, b } = await keyChain();
    failRevokedMark = true;
    try {
      await expect(revokeAccountApiKey(account, operator.keyId, a.keyId)).rejects.toThrow();
    } finally {
      failRevokedMark = false;
    }
    expect(await getAccountKeyCount(account)).toMatchObject({ revocationsUnderWay: [hashApiKey(a.key)] });
    expect(await resolveApiKey(a.key)).toBeUndefined();
    expect(await resolveApiKey(b.key)).toBeUndefined();
    expect(await resolveApiKey(operatorKey)).toMatchObject({ account });

    await createAccountApiKey(account, operator.keyId);
    expect(await getAccountKeyCount(account)).toMatchObject({ revocationsUnderWay: [] });
  });
});

describe('revoking a key id the account does not have', () => {
  /** The reads of a revocation of an unknown id by the operator's key, after `churned` keys were made and revoked. */
  async function readsOfUnknownRevocation(churned: number) {
    const account = randomAccount();
    const operator = (await createApiKey(account)).record;
    for (let index = 0; index < churned; index += 1) {
      const made = await createAccountApiKey(account, operator.keyId);
      await revokeAccountApiKey(account, operator.keyId, made.keyId);
    }
    reads.length = 0;
    const response = await revoke(account, operator.keyId, 'abcdef012345');
    expect(response.status).toBe(404);
    return [...reads];
  }

  it('reads the one item naming that id, besides the calling key, however many keys the account made and revoked', async () => {
    const fresh = await readsOfUnknownRevocation(0);
    expect(fresh).toEqual([
      { command: 'GetItem', sortKey: 'ACCOUNT' },
      { command: 'GetItem', sortKey: 'APIKEY' },
      { command: 'GetItem', sortKey: 'APIKEYID#abcdef012345' },
    ]);
    expect(await readsOfUnknownRevocation(40)).toEqual(fresh);
  });

  it("reads an account's listing once for keys made before their id items, then one item a miss", async () => {
    const account = randomAccount();
    const operator = (await createApiKey(account)).record;
    const made = await createAccountApiKey(account, operator.keyId);
    await revokeAccountApiKey(account, operator.keyId, made.keyId);
    // As an earlier version left them: no id items, no mark that the account has them.
    for (const keyId of [operator.keyId, made.keyId]) await deleteItem({ TableName: tableName(), Key: apiKeyIdKey(account, keyId) });
    await updateItem({ TableName: tableName(), Key: accountKey(account), UpdateExpression: 'REMOVE keyIdsIndexed' });

    reads.length = 0;
    expect((await revoke(account, operator.keyId, 'abcdef012345')).status).toBe(404);
    expect(reads.filter((read) => read.command === 'Query')).toEqual([{ command: 'Query', index: 'gsi1' }]);
    expect(await getAccountKeyCount(account)).toMatchObject({ keyIdsIndexed: true });

    reads.length = 0;
    expect((await revoke(account, operator.keyId, '0123456789ab')).status).toBe(404);
    expect(reads.filter((read) => read.command === 'Query')).toEqual([]);
    // The revoked key, which its account no longer counts, is found by its id item.
    const again = await revoke(account, operator.keyId, made.keyId);
    expect(again).toMatchObject({ status: 200, body: { keyId: made.keyId, revokedAt: expect.any(Number) } });
  });
});
