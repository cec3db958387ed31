import { startLocalService, type LocalService } from '../../infra/local/local-service';
import { FOLLOWED_CHAINS_VARIABLE } from '../../lib/config/chains';
import { runtimeConfig } from '../../lib/config/runtime';
import { createApiKey } from '../../lib/keys/api-keys';

/** What `npm start` once wrote to its environment for its processes to read. */
const HANDED_OVER = ['PAGE_TOKEN_KEY', 'DELIVERY_QUEUE_URL', 'SERVICE_PORTS', FOLLOWED_CHAINS_VARIABLE, 'DYNAMODB_PORT', 'DYNAMODB_CREDENTIAL_FILE', 'DELIVERY_SWEEP_GRACE_SECONDS'];

let service: LocalService | undefined;
let envBefore: NodeJS.ProcessEnv;

beforeAll(async () => {
  for (const name of HANDED_OVER) delete process.env[name];
  envBefore = { ...process.env };
  service = await startLocalService({
    env: { ...process.env, DYNAMODB_ENDPOINT: process.env.TEST_DYNAMODB_ENDPOINT, STAGE: 'local', TABLE_NAME: 'webhooks-config-test' },
    port: 0,
    host: '127.0.0.1',
    dynamoDbPort: 0,
    processes: 'this process',
    chainsWithoutFollower: ['43114'],
  });
});
afterAll(async () => {
  await service?.close();
});

it('writes nothing to process.env: what it set up is in the configuration it installed', () => {
  expect(process.env).toEqual(envBefore);
  for (const name of HANDED_OVER) expect(process.env[name]).toBeUndefined();

  const config = runtimeConfig();
  const portOf = (url: string | undefined) => Number(new URL(url!).port);
  expect(config.dynamoDbEndpoint).toBe(service!.dynamoDbEndpoint);
  expect(config.deliveryQueueUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/000000000000\/deliveries$/);
  expect(config.loopbackTargets?.servicePorts).toEqual(
    expect.arrayContaining([portOf(service!.url), portOf(config.dynamoDbEndpoint), portOf(config.deliveryQueueUrl)]),
  );
  expect(config.followedChains.map((chain) => chain.chainId)).toEqual(['43114']);
  expect(config.pageTokenKey).toEqual({ hex: expect.stringMatching(/^[0-9a-f]{64}$/) });
  expect(config.delivery.sweepGraceSeconds).toBe(5);
  expect(config.storeDeletesExpiredItems).toBe(false);
});

it('hands its processes a configuration that crosses an IPC channel unchanged', () => {
  const config = runtimeConfig();
  expect(JSON.parse(JSON.stringify(config))).toEqual(config);
  expect(structuredClone(config)).toEqual(config);
});

it('serves the API with that configuration: a key made in its store lists webhooks', async () => {
  const { key } = await createApiKey('config-test');
  const response = await fetch(`${service!.url}/v1/webhooks?pageSize=1`, { headers: { 'x-service-api-key': key } });
  expect(response.status).toBe(200);
  expect(await response.json()).toEqual({ webhooks: [] });
});
