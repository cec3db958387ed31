import { handler as generateOrRotate } from '../../functions/generate-or-rotate-shared-secret';
import { handler as getSharedSecret } from '../../functions/get-shared-secret';
import { createApiKey } from '../../lib/keys/api-keys';
import { tableName } from '../../lib/store/client';
import { getItem } from '../../lib/store/items';
import { sharedSecretKey } from '../../lib/store/table';
import { useEmbeddedStore } from '../support/embedded-store';
import { apiEvent, randomAccount } from '../support/factories';
import type { Context } from 'aws-lambda';

useEmbeddedStore();
const context = {} as Context;

/** The rotation as a key of the account calls it (the rotation reads its calling key). */
async function rotate(account: string, body?: unknown) {
  const event = apiEvent({ account, method: 'POST', body });
  (event.requestContext.authorizer as Record<string, string>).keyId = (callers[account] ??= (await createApiKey(account)).record.keyId);
  return generateOrRotate(event, context);
}
const callers: Record<string, string> = {};

describe('shared secret handlers', () => {
  it('answers 404 before any secret was generated', async () => {
    const response = await getSharedSecret(apiEvent({ account: randomAccount() }), context);
    expect(response.statusCode).toBe(404);
    expect(JSON.parse(response.body)).toMatchObject({ statusCode: 404, error: 'Not Found' });
  });

  it('generates a 64-hex-character secret with 201 and returns it from get', async () => {
    const account = randomAccount();
    const created = await rotate(account);
    expect(created.statusCode).toBe(201);
    const { secret } = JSON.parse(created.body);
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    const fetched = await getSharedSecret(apiEvent({ account }), context);
    expect(fetched.statusCode).toBe(200);
    expect(JSON.parse(fetched.body)).toEqual({ secret });
  });

  it('rotates: the new secret replaces the current one, which is kept as previous', async () => {
    const account = randomAccount();
    const first = JSON.parse((await rotate(account, {})).body).secret;
    const second = JSON.parse((await rotate(account, { ignored: true })).body).secret;
    expect(second).not.toBe(first);
    const item = await getItem({ TableName: tableName(), Key: sharedSecretKey(account) });
    expect(item).toMatchObject({ currentSecret: second, previousSecret: first });
    expect(typeof item?.previousReplacedAt).toBe('number');
  });

  it('serialises concurrent rotations: each succeeds, and current and previous are two of the returned secrets', async () => {
    const account = randomAccount();
    const responses = await Promise.all(Array.from({ length: 20 }, () => rotate(account)));
    expect(responses.map((response) => response.statusCode)).toEqual(Array(20).fill(201));
    const returned = responses.map((response) => JSON.parse(response.body).secret as string);
    expect(new Set(returned).size).toBe(20);
    const item = await getItem({ TableName: tableName(), Key: sharedSecretKey(account), ConsistentRead: true });
    expect(returned).toContain(item?.currentSecret);
    expect(returned).toContain(item?.previousSecret);
    expect(item?.previousSecret).not.toBe(item?.currentSecret);
    const fetched = JSON.parse((await getSharedSecret(apiEvent({ account }), context)).body).secret;
    expect(fetched).toBe(item?.currentSecret);
  });

  it('keeps accounts apart', async () => {
    const [a, b] = [randomAccount(), randomAccount()];
    const secretA = JSON.parse((await rotate(a)).body).secret;
    expect((await getSharedSecret(apiEvent({ account: b }), context)).statusCode).toBe(404);
    const secretB = JSON.parse((await rotate(b)).body).secret;
    expect(JSON.parse((await getSharedSecret(apiEvent({ account: a }), context)).body).secret).toBe(secretA);
    expect(secretB).not.toBe(secretA);
  });

  it('refuses a malformed body with 400 and leaves the secret unchanged', async () => {
    const account = randomAccount();
    const secret = JSON.parse((await rotate(account)).body).secret;
    const response = await rotate(account, '{"not json');
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body).message).toBe('Request body is not valid JSON');
    expect(JSON.parse((await getSharedSecret(apiEvent({ account }), context)).body).secret).toBe(secret);
  });
});
