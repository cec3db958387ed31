/**
 * Per-stage settings, shared by the runtime (local gateway, handlers) and the CDK stack,
 * so that a stage behaves the same locally and on AWS.
 */
export interface UsagePlanSettings {
  /** Steady-state requests per second (token bucket refill rate). */
  rateLimit: number;
  /** Bucket size: requests that may arrive at once. */
  burstLimit: number;
  /** Requests per period; absent means no quota. */
  quota?: { limit: number; period: 'DAY' | 'WEEK' | 'MONTH' };
}

export type UsagePlanName = 'standard' | 'unlimited';

export interface StageSettings {
  name: string;
  production: boolean;
  /** `http://localhost` webhook URLs are accepted only outside production. */
  allowHttpLocalhostUrls: boolean;
  usagePlans: Record<UsagePlanName, UsagePlanSettings>;
  /** Plan a new API key is attached to. */
  defaultUsagePlan: UsagePlanName;
  /**
   * How long a resolved API key is trusted without asking the table again: the longest a revoked
   * key keeps working. 60 s in every stage, prod included; each key costs one GetItem a minute per
   * cache, little against letting a leaked key work for longer.
   */
  authorizerCacheTtlSeconds: number;
  logRetentionDays: number;
  lambdaMemoryMb: number;
  /** Every function's timeout, under API Gateway's 29 s integration limit. */
  lambdaTimeoutSeconds: number;
  /** Watched addresses: how many one webhook may have, and how many one call may add or remove. */
  addressLimits: { perWebhook: number; perCall: number };
  /** What one account may hold and how often it may call the operations that send at once (docs/limits.md). */
  accountLimits: AccountLimits;
  /** Timeout of the background function that purges deleted webhooks and completes interrupted address changes. */
  maintenanceTimeoutSeconds: number;
  delivery: DeliverySettings;
  backfills: BackfillSettings;
  /** Chains (of KNOWN_CHAINS) a follower function follows on AWS, each with its RPC URL in a secret. */
  followedChains: string[];
  /**
   * Opt-in: a WAF web ACL on the API's stage that blocks (429) a client IP address sending more than
   * `rateLimitPer5Minutes` requests in 5 minutes, before the authorizer or any function runs. Off in
   * every stage unless set here or with `-c wafRateLimitPer5Minutes=N` (infra/app.ts): WAF is billed per ACL and request.
   */
  waf?: { rateLimitPer5Minutes: number };
}

export interface AccountLimits {
  /** Webhooks, active and inactive; one deleted for good frees its slot once its addresses are purged. At most 3 000. */
  webhooksPerAccount: number;
  /** Watched addresses in all of the account's webhooks together (an address in two webhooks counts twice). */
  addressesPerAccount: number;
  /** Test notifications one webhook may be sent in a minute. */
  testNotificationsPerMinute: number;
  /** Recover calls one webhook may take in a minute. */
  recoversPerMinute: number;
  /** Retries (of one message each) one webhook may take in a minute. */
  retriesPerMinute: number;
  /** Test notifications all of an account's webhooks together may be sent in a minute, new webhooks included. */
  testNotificationsPerMinutePerAccount: number;
  /** Recover calls all of an account's webhooks together may take in a minute. */
  recoversPerMinutePerAccount: number;
  /** Retries all of an account's webhooks together may take in a minute. */
  retriesPerMinutePerAccount: number;
  /** API keys not revoked (a revoked key is kept for the audit trail, and no longer counts). */
  apiKeysPerAccount: number;
  /** API keys an account may create through the API in a minute (the operator's keys CLI is not limited). */
  apiKeyCreationsPerMinute: number;
}

/** Backfills: a webhook's notifications of past blocks (docs/backfills.md). */
export interface BackfillSettings {
  /** Blocks one backfill may cover (toBlock - fromBlock + 1). */
  maxBlocks: number;
  /** Backfills of one account running at once (and at most one per webhook). */
  runningPerAccount: number;
  /**
   * JSON-RPC requests a second that all backfills of one chain send together: the node's capacity
   * beyond it is the live follower's. A block costs one request, two with transactions, three with traces.
   */
  rpcRequestsPerSecond: number;
  /** Backfills of one chain worked on at once; the others wait their turn, oldest first. */
  concurrencyPerChain: number;
  /** How long a backfill is worked on before those waiting for their turn go first. */
  turnSeconds: number;
  /** The backfills a webhook keeps (the newest): starting another deletes the oldest ended one beyond it. */
  keptPerWebhook: number;
}

/** How notifications are sent, retried and kept. */
export interface DeliverySettings {
  /** Seconds before attempts 2, 3, ...: the hosted API's schedule by default. Each is jittered by ±10 %. */
  retryScheduleSeconds: number[];
  /** One attempt's limit: connecting, the response's headers and the first 4 KB of its body. */
  attemptTimeoutSeconds: number;
  /** After a rotation, how long notifications also carry a signature with the previous secret. */
  secretGraceSeconds: number;
  /** How long messages and their attempts are kept (DynamoDB TTL on AWS, a sweep locally). */
  retentionDays: number;
  /**
   * How long after a message is due the sweep of the due-time index takes it up: the queue carries
   * it on time, and the sweep is what makes at-least-once hold when a queue message is lost.
   */
  sweepGraceSeconds: number;
  /**
   * Attempts under way at once. `total`: the queue's consumers take batches of 10, `total / 10` batches
   * at once (the dispatcher function's maximum concurrency on AWS). `perAccount`, and `perHost` (one
   * account's attempts to one site, and to one resolved address): every attempt holds a slot of each
   * while it runs, so that an account's slow or dead receivers hold at most that many of the pool. A
   * receiver answering in 50 ms takes `perHost / 0.05` attempts a second (320).
   */
  concurrency: { total: number; perAccount: number; perHost: number };
  /**
   * Attempts a second to one destination, whoever sends them: its site (registrable domain) and,
   * apart, its resolved address, across every webhook and account that points at it. Attempts past
   * it wait (put off), none is dropped. A receiver that needs more is given it by raising this.
   */
  destinationRatePerSecond: number;
  /**
   * Partitions of the due-time index (gsi3's `DUE#<shard>`). Every message's insert and end writes
   * one of them, and one index partition takes at most 1 000 writes a second: the stage's rate is
   * at most about 500 × this (docs/delivery-scale.md). Every sweep pass queries each one. Only ever
   * raised: a message keeps the shard it was given, and the sweep reads shards 0 to this.
   */
  dueIndexShards: number;
}

/** The hosted API's published schedule: attempt 2 after 10 s, then 1 min, 5 min, 10 min, 30 min, 2 h, 6 h, 12 h, 24 h. */
export const HOSTED_RETRY_SCHEDULE_SECONDS = [10, 60, 300, 600, 1800, 7200, 21600, 43200, 86400];

const delivery: DeliverySettings = {
  retryScheduleSeconds: HOSTED_RETRY_SCHEDULE_SECONDS,
  attemptTimeoutSeconds: 10,
  secretGraceSeconds: 24 * 3600,
  retentionDays: 30,
  sweepGraceSeconds: 120,
  concurrency: { total: 256, perAccount: 64, perHost: 16 },
  destinationRatePerSecond: 1_000,
  dueIndexShards: 8,
}

const backfills: BackfillSettings = { maxBlocks: 1_000_000, runningPerAccount: 3, rpcRequestsPerSecond: 100, concurrencyPerChain: 4, turnSeconds: 10, keptPerWebhook: 100 };

const standardPlans: Record<UsagePlanName, UsagePlanSettings> = {
  standard: { rateLimit: 100, burstLimit: 200, quota: { limit: 1_000_000, period: 'MONTH' } },
  unlimited: { rateLimit: 1000, burstLimit: 2000 },
};

const development: Omit<StageSettings, 'name'> = {
  production: false,
  allowHttpLocalhostUrls: true,
  usagePlans: standardPlans,
  defaultUsagePlan: 'standard',
  authorizerCacheTtlSeconds: 60,
  logRetentionDays: 7,
  lambdaMemoryMb: 512,
  lambdaTimeoutSeconds: 10,
  addressLimits: { perWebhook: 1_000_000, perCall: 10_000 },
  accountLimits: {
    webhooksPerAccount: 1_000,
    addressesPerAccount: 5_000_000,
    testNotificationsPerMinute: 10,
    recoversPerMinute: 5,
    retriesPerMinute: 30,
    testNotificationsPerMinutePerAccount: 60,
    recoversPerMinutePerAccount: 30,
    retriesPerMinutePerAccount: 120,
    apiKeysPerAccount: 20,
    apiKeyCreationsPerMinute: 10,
  },
  maintenanceTimeoutSeconds: 300,
  delivery,
  backfills,
  followedChains: ['43114', '43113'],
};

const production: Omit<StageSettings, 'name'> = {
  ...development,
  production: true,
  allowHttpLocalhostUrls: false,
  logRetentionDays: 90,
  lambdaMemoryMb: 1024,
  delivery: { ...delivery, dueIndexShards: 256 },
};

/** `prod` is production; every other stage name (`local`, `dev`, a developer's own) is development. */
export function stageSettings(name: string): StageSettings {
  if (!/^[a-z][a-z0-9-]{0,19}$/.test(name)) {
    throw new Error(`Invalid stage name '${name}': use 1-20 lower-case letters, digits or '-', starting with a letter`);
  }
  return { name, ...(name === 'prod' ? production : development) };
}
