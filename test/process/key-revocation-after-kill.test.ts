import { createAccountApiKey } from '../../lib/keys/account-api-keys';
import { createApiKey, hashApiKey, listApiKeys, resolveApiKey, type ApiKeyRecord } from '../../lib/keys/api-keys';
import { createKeyWithGatewayKey } from '../../lib/keys/gateway-keys';
import { getAccountKeyCount, getApiKeyItem } from '../../lib/store/api-keys';
import { useEmbeddedStore } from '../support/embedded-store';
import { randomAccount } from '../support/factories';
import { spawnScript } from '../support/processes';
import { until } from '../support/until';

useEmbeddedStore();

// Enough keys under the root that the walk is still under way when the kill lands, a few milliseconds after the root is marked.
const CHILDREN = 60;
const GRANDCHILDREN_EACH = 2;

it(
  'a revocation by the keys CLI killed after marking the root leaves no key under it working, and the next key operation finishes it',
  async () => {
    const account = randomAccount();
    const operator = await createApiKey(account);
    const root = await createApiKey(account, { name: 'leaked' });
    const makeUnder = (creator: { key: string; record: ApiKeyRecord }) =>
      createKeyWithGatewayKey(account, undefined, undefined, { creator: { keyHash: hashApiKey(creator.key), record: creator.record } });
    const children = [];
    for (let index = 0; index < CHILDREN; index += 1) children.push(await makeUnder(root));
    const grandchildren = [];
    for (const child of children.slice(0, 10)) for (let index = 0; index < GRANDCHILDREN_EACH; index += 1) grandchildren.push(await makeUnder(child));
    const descendants = [...children, ...grandchildren];
    for (const key of descendants) expect(await resolveApiKey(key.key)).toMatchObject({ account });

    const cli = spawnScript('infra/keys-cli.ts', ['revoke', root.record.keyId, '--account', account], {
      DYNAMODB_PORT: process.env.DYNAMODB_PORT!,
      TABLE_NAME: process.env.TABLE_NAME!,
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => cli.once('exit', (_, signal) => resolve(signal)));
    try {
      await until('the CLI has marked the root revoked', 60_000, () => getApiKeyItem(hashApiKey(root.key), { consistent: true }), (record) => record?.revokedAt !== undefined, 2);
    } finally {
      cli.kill('SIGKILL');
    }
    expect(await exited).toBe('SIGKILL');

    const marked = async () => (await listApiKeys(account)).filter((record) => record.revokedAt !== undefined).map((record) => record.keyId);
    const markedAtKill = await marked();
    // Cut off midway: the root marked, not all it made (else the kill came too late to test anything).
    expect(markedAtKill).toContain(root.record.keyId);
    expect(markedAtKill.length).toBeLessThan(descendants.length + 1);
    // None works, marked or not: each descends from the root.
    for (const key of descendants) expect(await resolveApiKey(key.key)).toBeUndefined();
    expect(await resolveApiKey(operator.key)).toMatchObject({ account });
    expect((await getAccountKeyCount(account))?.revocationsUnderWay).toEqual([hashApiKey(root.key)]);

    // The next key operation on the account finishes the revocation first.
    const made = await createAccountApiKey(account, operator.record.keyId);
    const records = await listApiKeys(account);
    const working = records.filter((record) => record.revokedAt === undefined).map((record) => record.keyId);
    expect(working.sort()).toEqual([operator.record.keyId, made.keyId].sort());
    expect(await getAccountKeyCount(account)).toMatchObject({ activeKeys: 2, revocationsUnderWay: [] });
  },
  120_000,
);
