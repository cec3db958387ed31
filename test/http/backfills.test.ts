import { randomUUID } from 'node:crypto';
import { devChainSettings } from '../../lib/config/chains';
import { runtimeConfig } from '../../lib/config/runtime';
import { INVALID_BACKFILL_PAGE_TOKEN } from '../../lib/page-token';
import { randomAddress } from '../support/factories';
import { useDevChain } from '../support/dev-chain';
import { useLocalService } from '../support/local-service';
import { expectError, type HttpResponse } from './support/expectations';
import { webhooksApi } from './support/webhooks-api';

const CHAIN_ID = '31337';
const MAX_BLOCKS = 1000;
/** Blocks mined before the tests: enough for a backfill over the longest range, and one past it. */
const HISTORY = MAX_BLOCKS + 200;

const chain = useDevChain(CHAIN_ID);
// One running backfill per account, so that the per-account limit is met with two webhooks. The pace
// keeps a long backfill running for seconds (one request per empty block) while the tests look at it;
// the runner works on one backfill at a time, so that a newer one waits while an older one runs.
const client = useLocalService(
  { BACKFILL_MAX_BLOCKS: String(MAX_BLOCKS), BACKFILL_RUNNING_PER_ACCOUNT: '1', BACKFILL_RPC_REQUESTS_PER_SECOND: '100', BACKFILL_CONCURRENCY_PER_CHAIN: '1' },
  () => ({ chains: [devChainSettings(CHAIN_ID, chain.rpcUrl())] }),
);
const api = webhooksApi(client);

const NOT_A_BLOCK_NUMBER = 'must be a block number (a whole number from 0)';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const backfillsPath = (webhookId: string, query: Record<string, string | number | undefined> = {}) => {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) search.append(name, String(value));
  return search.size ? `/v1/webhooks/${webhookId}/backfills?${search}` : `/v1/webhooks/${webhookId}/backfills`;
};
const backfillPath = (webhookId: string, backfillId: string) => `/v1/webhooks/${webhookId}/backfills/${backfillId}`;

/** The live follower's checkpoint on the dev chain once it has followed every mined block. */
let checkpoint: number;

beforeAll(async () => {
  await chain.rpc('anvil_mine', [`0x${HISTORY.toString(16)}`]);
  const head = Number(await chain.rpc('eth_blockNumber'));
  const key = await api.newAccountKey();
  for (let tries = 0; tries < 400; tries += 1) {
    const { body } = await client.call('GET', '/v1/chains', { key });
    const followed = body.chains.find((one: { chainId: string }) => one.chainId === CHAIN_ID);
    if (followed?.follower.checkpointBlock === head) {
      checkpoint = head;
      return;
    }
    await sleep(50);
  }
  throw new Error(`the follower never reached block ${head}`);
});

/** Backfills the tests started, cancelled after each test so that none holds the runner at the end. */
const started: { key: string; webhookId: string; backfillId: string }[] = [];
afterEach(async () => {
  for (const { key, webhookId, backfillId } of started.splice(0)) await client.call('DELETE', backfillPath(webhookId, backfillId), { key });
});

/** A webhook on the dev chain watching an address with no activity, of the account of `key` (a new one by default). */
async function newWebhook(key?: string, overrides: Record<string, unknown> = {}) {
  const owner = key ?? (await api.newAccountKey());
  const webhook = await api.create(owner, { url: 'http://127.0.0.1:9/hook', chainId: CHAIN_ID, metadata: { addresses: [randomAddress()] }, ...overrides });
  return { key: owner, id: webhook.id as string };
}

const post = (key: string, webhookId: string, body: unknown) => client.call('POST', backfillsPath(webhookId), { key, body });

/** Starts a backfill, asserting 202; it is cancelled after the test. */
async function start(key: string, webhookId: string, body: Record<string, unknown> = { fromBlock: checkpoint - 900 }) {
  const response = await post(key, webhookId, body);
  expect(response.status).toBe(202);
  started.push({ key, webhookId, backfillId: response.body.backfillId });
  return response.body;
}

/** A webhook of a new account with a long backfill running: 901 blocks at 100 a second. */
async function runningBackfill() {
  const { key, id } = await newWebhook();
  return { key, id, backfill: await start(key, id) };
}

/** GET of a backfill, polled until `done` holds for the response (any 5xx fails at once). */
async function backfillWhen(key: string, webhookId: string, backfillId: string, done: (response: HttpResponse) => boolean, timeoutMs = 8000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const response = await client.call('GET', backfillPath(webhookId, backfillId), { key });
    expect(response.status).toBeLessThan(500);
    if (done(response)) return response;
    if (Date.now() > until) throw new Error(`backfill ${backfillId}: last answer ${response.status} ${JSON.stringify(response.body)}`);
    await sleep(50);
  }
}

/** The 404 body with the id taken out, so that answers for two different ids can be compared. */
function notFoundWithoutId(response: HttpResponse, id: string) {
  expectError(response, 404);
  return { ...response.body, message: (response.body.message as string).replaceAll(id, '<id>') };
}

/** The token with the character at `index` replaced by another base64url character. */
function withCharacterChanged(token: string, index: number): string {
  const replacement = token[index] === 'A' ? 'B' : 'A';
  return token.slice(0, index) + replacement + token.slice(index + 1);
}

describe('POST /v1/webhooks/{id}/backfills', () => {
  it('answers 202 with the running backfill, up to the checkpoint by default', async () => {
    const { key, id } = await newWebhook();
    const before = Date.now();
    const backfill = await start(key, id, { fromBlock: checkpoint - 900 });
    expect(Object.keys(backfill).sort()).toEqual(['backfillId', 'chainId', 'createdAt', 'fromBlock', 'nextBlock', 'notifications', 'status', 'toBlock', 'updatedAt', 'webhookId']);
    expect(backfill).toMatchObject({ webhookId: id, chainId: CHAIN_ID, status: 'running', fromBlock: checkpoint - 900, toBlock: checkpoint, nextBlock: checkpoint - 900, notifications: 0 });
    expect(backfill.backfillId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(backfill.createdAt).toBeGreaterThanOrEqual(before);
    expect((await client.call('GET', backfillPath(id, backfill.backfillId), { key })).body).toMatchObject({ backfillId: backfill.backfillId, status: 'running' });
  });

  it('completes a one-block backfill; a DELETE of it then answers it as it is', async () => {
    const { key, id } = await newWebhook();
    const backfill = await start(key, id, { fromBlock: checkpoint, toBlock: checkpoint });
    const { body } = await backfillWhen(key, id, backfill.backfillId, (response) => response.body.status !== 'running');
    expect(body).toMatchObject({ status: 'completed', nextBlock: checkpoint + 1, notifications: 0, endedAt: expect.any(Number) });
    expect(body).not.toHaveProperty('reason');
    const cancelled = await client.call('DELETE', backfillPath(id, backfill.backfillId), { key });
    expect(cancelled.status).toBe(202);
    expect(cancelled.body).toEqual(body);
  });

  it.each<[string, unknown, string]>([
    ['no fromBlock', {}, 'Invalid body field fromBlock: is required'],
    ['a negative fromBlock', { fromBlock: -1 }, `Invalid body field fromBlock: ${NOT_A_BLOCK_NUMBER}`],
    ['a fractional fromBlock', { fromBlock: 1.5 }, `Invalid body field fromBlock: ${NOT_A_BLOCK_NUMBER}`],
    ['fromBlock as a string', { fromBlock: '10' }, `Invalid body field fromBlock: ${NOT_A_BLOCK_NUMBER}`],
    ['fromBlock as a hex string', { fromBlock: '0x10' }, `Invalid body field fromBlock: ${NOT_A_BLOCK_NUMBER}`],
    ['fromBlock as null', { fromBlock: null }, `Invalid body field fromBlock: ${NOT_A_BLOCK_NUMBER}`],
    ['fromBlock as 1e30', { fromBlock: 1e30 }, `Invalid body field fromBlock: ${NOT_A_BLOCK_NUMBER}`],
    ['a fractional toBlock', { fromBlock: 0, toBlock: 2.5 }, `Invalid body field toBlock: ${NOT_A_BLOCK_NUMBER}`],
    ['toBlock as null', { fromBlock: 0, toBlock: null }, `Invalid body field toBlock: ${NOT_A_BLOCK_NUMBER}`],
    ['an unknown field', { fromBlock: 0, until: 5 }, 'Unknown body field until; allowed: fromBlock, toBlock'],
    ['toBlock before fromBlock', { fromBlock: 10, toBlock: 5 }, 'Invalid body field fromBlock: must be at most toBlock (5), got 10'],
  ])('answers 400 to %s, and starts nothing', async (_, body, message) => {
    const { key, id } = await newWebhook();
    expect(expectError(await post(key, id, body), 400)).toBe(message);
    expect((await client.call('GET', backfillsPath(id), { key })).body).toEqual({ backfills: [] });
  });

  it("answers 400 to a toBlock past the chain's checkpoint, and to a fromBlock past it", async () => {
    const { key, id } = await newWebhook();
    expect(expectError(await post(key, id, { fromBlock: 0, toBlock: checkpoint + 1 }), 400)).toBe(
      `Invalid body field toBlock: must be at most ${checkpoint}, chain ${CHAIN_ID}'s checkpoint (the live follower notifies the blocks after it), got ${checkpoint + 1}`,
    );
    expect(expectError(await post(key, id, { fromBlock: checkpoint + 1 }), 400)).toBe(
      `Invalid body field fromBlock: must be at most toBlock (${checkpoint}: by default chain ${CHAIN_ID}'s checkpoint, after which the live follower notifies), got ${checkpoint + 1}`,
    );
  });

  it('answers 400 to a range one block longer than BACKFILL_MAX_BLOCKS, and 202 to one of exactly that many', async () => {
    const { key, id } = await newWebhook();
    const from = checkpoint - MAX_BLOCKS;
    expect(expectError(await post(key, id, { fromBlock: from }), 400)).toBe(
      `Invalid body field fromBlock: a backfill covers at most ${MAX_BLOCKS} blocks (the backfills.maxBlocks limit), from ${from} to ${checkpoint} is ${MAX_BLOCKS + 1}: split the range`,
    );
    const backfill = await start(key, id, { fromBlock: from + 1 });
    expect(backfill.toBlock - backfill.fromBlock + 1).toBe(MAX_BLOCKS);
  });

  it('answers 400 to a second backfill of a webhook while its first runs, naming the running one; 202 once it is cancelled', async () => {
    const { key, id, backfill } = await runningBackfill();
    expect(expectError(await post(key, id, { fromBlock: checkpoint - 10 }), 400)).toBe(
      `Webhook ${id} has a running backfill (${backfill.backfillId}): one runs at a time per webhook (the backfills limit); cancel it (DELETE /v1/webhooks/${id}/backfills/${backfill.backfillId}) or wait for it to end`,
    );
    expect((await client.call('DELETE', backfillPath(id, backfill.backfillId), { key })).status).toBe(202);
    await start(key, id, { fromBlock: checkpoint - 10 });
  });

  it("answers 400 to a backfill beyond the account's running limit; another account is not held back by it", async () => {
    const { key, id, backfill } = await runningBackfill();
    const second = await newWebhook(key);
    expect(expectError(await post(key, second.id, { fromBlock: checkpoint - 10 }), 400)).toBe(
      `At most 1 backfill runs at once per account (the backfills.runningPerAccount limit): wait for one to end, or cancel one (DELETE /v1/webhooks/${id}/backfills/${backfill.backfillId})`,
    );
    await runningBackfill();
    expect((await client.call('DELETE', backfillPath(id, backfill.backfillId), { key })).status).toBe(202);
    await start(key, second.id, { fromBlock: checkpoint - 10 });
  });

  it('answers 400 for an inactive webhook', async () => {
    const { key, id } = await newWebhook();
    expect((await api.patch(key, id, { status: 'inactive' })).status).toBe(200);
    expect(expectError(await post(key, id, { fromBlock: 0 }), 400)).toBe(`Webhook ${id} is inactive: activate it (PATCH {"status":"active"}) to backfill it`);
  });

  it('answers 400 for a webhook on a chain taken as followed that has no checkpoint yet', async () => {
    const { key, id } = await newWebhook(undefined, { chainId: '43114' });
    expect(expectError(await post(key, id, { fromBlock: 0 }), 400)).toBe(
      'Chain 43114 is not followed yet (no checkpoint): retry once GET /v1/chains shows its checkpointBlock',
    );
  });

  it('answers 400 for a webhook on a chain the service no longer follows', async () => {
    const { key, id } = await newWebhook(undefined, { chainId: '1' });
    // As after a restart with chain 1 taken out of the followed chains: the configuration is read
    // once per process, so the process-wide list is changed here, and put back.
    const followed = runtimeConfig().followedChains;
    const saved = [...followed];
    followed.splice(0, followed.length, ...saved.filter((one) => one.chainId !== '1'));
    try {
      expect(expectError(await post(key, id, { fromBlock: 0 }), 400)).toBe(
        `Webhook ${id} is on chain 1, which this service does not follow (GET /v1/chains lists those it does): there is nothing to backfill from`,
      );
    } finally {
      followed.splice(0, followed.length, ...saved);
    }
  });

  it.each<[string, string, string]>([
    ['a JSON array', '[{"fromBlock":0}]', 'Request body must be a JSON object'],
    ['an empty JSON array', '[]', 'Request body must be a JSON object'],
    ['JSON null', 'null', 'Request body must be a JSON object'],
    ['a JSON string', '"0"', 'Request body must be a JSON object'],
    ['a JSON number', '0', 'Request body must be a JSON object'],
    ['JSON true', 'true', 'Request body must be a JSON object'],
    ['malformed JSON', '{"fromBlock": 0', 'Request body is not valid JSON'],
    ['fromBlock as 9007199254740993 (beyond exact integers)', '{"fromBlock": 9007199254740993}', `Invalid body field fromBlock: ${NOT_A_BLOCK_NUMBER}`],
    ['fromBlock as 1e400 (Infinity once parsed)', '{"fromBlock": 1e400}', `Invalid body field fromBlock: ${NOT_A_BLOCK_NUMBER}`],
    ['fromBlock as an object', '{"fromBlock": {"$gt": 0}}', `Invalid body field fromBlock: ${NOT_A_BLOCK_NUMBER}`],
    ['fromBlock as an array', '{"fromBlock": [0]}', `Invalid body field fromBlock: ${NOT_A_BLOCK_NUMBER}`],
    ['fromBlock as true', '{"fromBlock": true}', `Invalid body field fromBlock: ${NOT_A_BLOCK_NUMBER}`],
    ['toBlock as 1e30', '{"fromBlock": 0, "toBlock": 1e30}', `Invalid body field toBlock: ${NOT_A_BLOCK_NUMBER}`],
    ['a __proto__ field', '{"fromBlock": 0, "__proto__": {"toBlock": 1}}', 'Unknown body field __proto__; allowed: fromBlock, toBlock'],
    ['a constructor field', '{"fromBlock": 0, "constructor": {"name": "x"}}', 'Unknown body field constructor; allowed: fromBlock, toBlock'],
    ['the largest exact fromBlock', '{"fromBlock": 9007199254740991}', "Invalid body field fromBlock: must be at most toBlock (<checkpoint>: by default chain 31337's checkpoint, after which the live follower notifies), got 9007199254740991"],
    [
      'the largest exact toBlock',
      '{"fromBlock": 0, "toBlock": 9007199254740991}',
      "Invalid body field toBlock: must be at most <checkpoint>, chain 31337's checkpoint (the live follower notifies the blocks after it), got 9007199254740991",
    ],
  ])('answers 400 (never a 500) to %s as the body', async (_, body, message) => {
    const { key, id } = await newWebhook();
    expect(expectError(await post(key, id, body), 400)).toBe(message.replaceAll('<checkpoint>', String(checkpoint)));
    expect((await client.call('GET', backfillsPath(id), { key })).body).toEqual({ backfills: [] });
  });
});

describe('GET and DELETE /v1/webhooks/{id}/backfills/{backfillId}', () => {
  it('cancels a running backfill with 202, which then stays cancelled; a second DELETE answers it as it is', async () => {
    const { key, id, backfill } = await runningBackfill();
    const cancelled = await client.call('DELETE', backfillPath(id, backfill.backfillId), { key });
    expect(cancelled.status).toBe(202);
    expect(cancelled.body).toMatchObject({ backfillId: backfill.backfillId, status: 'cancelled', reason: 'cancelled by a DELETE call', endedAt: expect.any(Number) });
    const again = await client.call('DELETE', backfillPath(id, backfill.backfillId), { key });
    expect(again.status).toBe(202);
    expect(again.body).toEqual(cancelled.body);
    // Longer than a run of blocks at this pace: the run under way when it was cancelled records no progress.
    await sleep(800);
    expect((await client.call('GET', backfillPath(id, backfill.backfillId), { key })).body).toEqual(cancelled.body);
  });

  it('finds a backfill by its id in upper case', async () => {
    const { key, id, backfill } = await runningBackfill();
    const response = await client.call('GET', backfillPath(id, backfill.backfillId.toUpperCase()), { key });
    expect(response.status).toBe(200);
    expect(response.body.backfillId).toBe(backfill.backfillId);
  });

  it.each(['GET', 'DELETE'])('answers %s of an unknown backfill of the webhook with 404 naming it', async (method) => {
    const { key, id } = await newWebhook();
    const missing = randomUUID();
    expect(expectError(await client.call(method, backfillPath(id, missing), { key }), 404)).toBe(`Backfill ${missing} not found`);
  });

  it.each(['GET', 'DELETE'])('answers %s under an unknown webhook with 404 naming the webhook', async (method) => {
    const key = await api.newAccountKey();
    const missing = randomUUID();
    expect(expectError(await client.call(method, backfillPath(missing, randomUUID()), { key }), 404)).toBe(`Webhook ${missing} not found`);
  });

  it.each(['GET', 'DELETE'])('answers %s with a malformed backfill id or webhook id with 400 naming the path parameter', async (method) => {
    const { key, id } = await newWebhook();
    for (const malformed of ['not-a-uuid', '12345', `${randomUUID()}0`]) {
      expect(expectError(await client.call(method, backfillPath(id, malformed), { key }), 400)).toBe('Invalid path parameter backfillId: must be a backfill id (a UUID)');
      expect(expectError(await client.call(method, backfillPath(malformed, randomUUID()), { key }), 400)).toBe('Invalid path parameter id: must be a webhook id (a UUID)');
    }
  });

  it('answers PUT and PATCH with 405 and an Allow header of DELETE and GET', async () => {
    const { key, id } = await newWebhook();
    for (const method of ['PUT', 'PATCH']) {
      const response = await client.call(method, backfillPath(id, randomUUID()), { key, body: { fromBlock: 0 } });
      expectError(response, 405);
      expect((response.headers.get('allow') ?? '').split(',').map((part) => part.trim()).sort()).toEqual(['DELETE', 'GET']);
    }
  });
});

describe('the webhook id on /v1/webhooks/{id}/backfills', () => {
  it.each<[string, unknown]>([
    ['GET', undefined],
    ['POST', { fromBlock: 0 }],
  ])('answers %s of an unknown webhook with 404, and of a malformed id with 400 naming it', async (method, body) => {
    const key = await api.newAccountKey();
    const missing = randomUUID();
    expect(expectError(await client.call(method, backfillsPath(missing), { key, body }), 404)).toBe(`Webhook ${missing} not found`);
    expect(expectError(await client.call(method, backfillsPath('not-a-uuid'), { key, body }), 400)).toBe('Invalid path parameter id: must be a webhook id (a UUID)');
  });
});

describe('isolation between accounts', () => {
  it("answers B's every call on A's webhook and backfill with the 404 of ids that do not exist, and changes nothing", async () => {
    const owner = await runningBackfill();
    const { backfillId } = owner.backfill;
    const other = await newWebhook();
    const missing = randomUUID();
    const calls: [string, (webhookId: string, backfillId: string) => string, unknown][] = [
      ['GET', backfillPath, undefined],
      ['DELETE', backfillPath, undefined],
      ['GET', (webhookId) => backfillsPath(webhookId), undefined],
      ['POST', (webhookId) => backfillsPath(webhookId), { fromBlock: checkpoint - 10 }],
    ];
    for (const [method, path, body] of calls) {
      const forA = await client.call(method, path(owner.id, backfillId), { key: other.key, body });
      const forMissing = await client.call(method, path(missing, randomUUID()), { key: other.key, body });
      expect(notFoundWithoutId(forA, owner.id)).toEqual(notFoundWithoutId(forMissing, missing));
    }
    // A's backfill id under B's own webhook is a backfill B does not have.
    for (const method of ['GET', 'DELETE']) {
      const forA = await client.call(method, backfillPath(other.id, backfillId), { key: other.key });
      const forMissing = await client.call(method, backfillPath(other.id, missing), { key: other.key });
      expect(notFoundWithoutId(forA, backfillId)).toEqual(notFoundWithoutId(forMissing, missing));
    }
    const listed = await client.call('GET', backfillsPath(owner.id), { key: owner.key });
    expect(listed.body.backfills.map((one: { backfillId: string; status: string }) => [one.backfillId, one.status])).toEqual([[backfillId, 'running']]);
    expect((await client.call('GET', backfillsPath(other.id), { key: other.key })).body).toEqual({ backfills: [] });
  });
});

describe('GET /v1/webhooks/{id}/backfills paging', () => {
  let key: string;
  let id: string;
  /** Three backfills of the webhook, newest first: two cancelled, the newest running. */
  let newestFirst: string[];
  beforeAll(async () => {
    ({ key, id } = await newWebhook());
    const ids: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      ids.push((await start(key, id, { fromBlock: checkpoint - 900 + index })).backfillId);
      if (index < 2) expect((await client.call('DELETE', backfillPath(id, ids[index]!), { key })).status).toBe(202);
    }
    newestFirst = ids.reverse();
  });

  it('lists newest first in pages of pageSize, with no nextPageToken key on the last page', async () => {
    const first = await client.call('GET', backfillsPath(id, { pageSize: 2 }), { key });
    expect(first.status).toBe(200);
    expect(first.body.backfills.map((one: { backfillId: string }) => one.backfillId)).toEqual(newestFirst.slice(0, 2));
    expect(first.body.backfills.map((one: { status: string }) => one.status)).toEqual(['running', 'cancelled']);
    expect(typeof first.body.nextPageToken).toBe('string');
    const second = await client.call('GET', backfillsPath(id, { pageSize: 2, pageToken: first.body.nextPageToken }), { key });
    expect(second.body.backfills.map((one: { backfillId: string }) => one.backfillId)).toEqual(newestFirst.slice(2));
    expect(second.body).not.toHaveProperty('nextPageToken');
  });

  it('ends with a full page without a token when the count is a multiple of pageSize, and lists all by default', async () => {
    const whole = await client.call('GET', backfillsPath(id, { pageSize: 3 }), { key });
    expect(whole.body.backfills.map((one: { backfillId: string }) => one.backfillId)).toEqual(newestFirst);
    expect(whole.body).not.toHaveProperty('nextPageToken');
    const byDefault = await client.call('GET', backfillsPath(id), { key });
    expect(byDefault.body).toEqual(whole.body);
  });

  it.each(['0', '101', 'x', '-1', '1.5', '1e2', ' 5'])('answers 400 naming pageSize for pageSize=%s', async (pageSize) => {
    expect(expectError(await client.call('GET', backfillsPath(id, { pageSize }), { key }), 400)).toBe('Invalid query parameter pageSize: must be an integer from 1 to 100');
  });

  it('answers 400 naming an unknown query parameter', async () => {
    expect(expectError(await client.call('GET', backfillsPath(id, { status: 'running' }), { key }), 400)).toBe('Unknown query parameter status; allowed: pageToken, pageSize');
  });

  it("answers 400 to a token of another webhook's backfills, of another account's, of the webhook list, or altered", async () => {
    const sibling = await newWebhook(key);
    for (let index = 0; index < 2; index += 1) {
      const { backfillId } = await start(key, sibling.id, { fromBlock: checkpoint - 10 });
      expect((await client.call('DELETE', backfillPath(sibling.id, backfillId), { key })).status).toBe(202);
    }
    const siblingToken = (await client.call('GET', backfillsPath(sibling.id, { pageSize: 1 }), { key })).body.nextPageToken;
    const own = (await client.call('GET', backfillsPath(id, { pageSize: 1 }), { key })).body.nextPageToken as string;
    await api.create(key);
    const webhooksToken = (await api.page(key, { pageSize: 1 })).nextPageToken;
    const stranger = await newWebhook();
    const tokens = [siblingToken, webhooksToken, withCharacterChanged(own, 5), withCharacterChanged(own, own.length - 3), `${own}A`, own.slice(1), 'x'];
    for (const pageToken of tokens) {
      expect(expectError(await client.call('GET', backfillsPath(id, { pageToken }), { key }), 400)).toBe(INVALID_BACKFILL_PAGE_TOKEN);
    }
    // The owner's own token, in another account's list of its own webhook.
    expect(expectError(await client.call('GET', backfillsPath(stranger.id, { pageToken: own }), { key: stranger.key }), 400)).toBe(INVALID_BACKFILL_PAGE_TOKEN);
    // Taken back to where it was issued, it still works.
    expect((await client.call('GET', backfillsPath(id, { pageToken: own }), { key })).status).toBe(200);
  });
});

describe('a webhook deleted with a running backfill', () => {
  /** BACKFILL_RUNNING_PER_ACCOUNT is 1: a backfill of another webhook of the account starts once the slot is free. */
  async function expectNextBackfillStarts(key: string) {
    const next = await newWebhook(key);
    const until = Date.now() + 5000;
    let response = await post(key, next.id, { fromBlock: checkpoint - 10 });
    while (response.status === 400 && Date.now() < until) {
      await sleep(100);
      response = await post(key, next.id, { fromBlock: checkpoint - 10 });
    }
    expect(response.status).toBe(202);
    started.push({ key, webhookId: next.id, backfillId: response.body.backfillId });
  }

  const deleteForGood = async (key: string, id: string) => expect((await client.call('DELETE', `/v1/webhooks/${id}?permanent=true`, { key })).status).toBe(200);

  it("ends the backfill the runner works on (failed, or purged with the webhook: then 404), without a 500, and frees the account's running slot", async () => {
    const { key, id, backfill } = await runningBackfill();
    await backfillWhen(key, id, backfill.backfillId, (response) => response.body.nextBlock > backfill.fromBlock);
    await deleteForGood(key, id);

    // Which comes first, the runner's next run or the purge, is a race: either ends it.
    const { status, body } = await backfillWhen(key, id, backfill.backfillId, (response) => response.status === 404 || response.body.status !== 'running');
    if (status === 404) expect(body.message).toBe(`Webhook ${id} not found`);
    else expect(body).toMatchObject({ status: 'failed', reason: 'the webhook was deleted' });
    expectError(await client.call('GET', backfillsPath(id), { key }), 404);
    await expectNextBackfillStarts(key);
  });

  it('fails the backfill of a webhook deactivated (deleted, not for good) while it runs, and frees the slot', async () => {
    const { key, id, backfill } = await runningBackfill();
    await backfillWhen(key, id, backfill.backfillId, (response) => response.body.nextBlock > backfill.fromBlock);
    expect((await client.call('DELETE', `/v1/webhooks/${id}`, { key })).status).toBe(200);
    const { body } = await backfillWhen(key, id, backfill.backfillId, (response) => response.body.status !== 'running');
    expect(body).toMatchObject({ status: 'failed', endedAt: expect.any(Number) });
    expect(body.reason).toBe(`the webhook was deactivated: blocks from ${body.nextBlock} on were not read; backfill them once it is active again`);
    await expectNextBackfillStarts(key);
  });

  it("purges a backfill waiting for the runner with the webhook, and frees the account's running slot", async () => {
    // BACKFILL_CONCURRENCY_PER_CHAIN is 1: the runner works on the older backfill, the other waits.
    await runningBackfill();
    const { key, id, backfill } = await runningBackfill();
    await sleep(300);
    expect((await client.call('GET', backfillPath(id, backfill.backfillId), { key })).body.nextBlock).toBe(backfill.fromBlock);
    await deleteForGood(key, id);

    const { body } = await backfillWhen(key, id, backfill.backfillId, (response) => response.status === 404);
    expect(body.message).toBe(`Webhook ${id} not found`);
    await expectNextBackfillStarts(key);
  });
});

describe('the API document', () => {
  it('lists the four backfill operations with their success statuses', async () => {
    const { body } = await client.call('GET', '/openapi.json');
    const operations = (path: string) =>
      Object.fromEntries(Object.entries(body.paths[path] as Record<string, { operationId: string; responses: Record<string, unknown> }>).map(([method, operation]) => [
        method,
        [operation.operationId, Object.keys(operation.responses).filter((status) => status.startsWith('2'))],
      ]));
    expect(operations('/v1/webhooks/{id}/backfills')).toEqual({ post: ['createBackfill', ['202']], get: ['listBackfills', ['200']] });
    expect(operations('/v1/webhooks/{id}/backfills/{backfillId}')).toEqual({ get: ['getBackfill', ['200']], delete: ['cancelBackfill', ['202']] });
  });
});
