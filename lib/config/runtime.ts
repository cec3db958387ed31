import { followedChainsFrom, type PublicChainFacts } from './chains';
import {
  stageSettings,
  type AccountLimits,
  type BackfillSettings,
  type DeliverySettings,
  type StageSettings,
  type UsagePlanName,
  type UsagePlanSettings,
} from './stages';

/**
 * What a process needs to know: a Lambda or a CLI reads it once from its environment; `npm start`
 * builds it once and hands it to each of its processes. Plain data, so that it crosses an IPC channel.
 */
export interface RuntimeConfig {
  stage: StageSettings;
  tableName: string;
  /** Absent: the AWS SDK's default endpoint for the region. */
  dynamoDbEndpoint?: string;
  /**
   * The file holding the secret that `npm start`'s embedded store requires requests to be signed with
   * (`npm start`'s, or DYNAMODB_CREDENTIAL_FILE for the keys CLI): for the store on DYNAMODB_PORT only.
   */
  dynamoDbCredentialFile?: string;
  /** DYNAMODB_MAX_ATTEMPTS: attempts the DynamoDB client makes per request. */
  dynamoDbMaxAttempts: number;
  /** Whether the environment gives the AWS SDK credentials (AWS_ACCESS_KEY_ID): DynamoDB Local on loopback is then signed with them. */
  awsAccessKeyGiven: boolean;
  /**
   * Whether the store deletes items whose TTL attribute has passed: DynamoDB does, on AWS; the
   * embedded store and DynamoDB Local do not, so the local sweep deletes expired messages itself.
   */
  storeDeletesExpiredItems: boolean;
  region: string;
  /** Throttle applied by the local gateway; on AWS the usage plans do it. */
  localThrottle: UsagePlanSettings;
  /** What one of the local gateway's processes holds open for its clients; on AWS API Gateway bounds it. */
  localGatewayBounds: LocalGatewayBounds;
  authorizerCacheTtlSeconds: number;
  /**
   * How long a lease on a webhook's addresses or on a purge lasts without renewal: how long a change
   * or purge cut off by a crash waits before another process completes it.
   */
  leaseSeconds: number;
  /** The stage's limits on watched addresses; locally the environment may lower or raise them (tests). */
  addressLimits: { perWebhook: number; perCall: number };
  /** The stage's limits per account; locally the environment may lower or raise them (tests). */
  accountLimits: AccountLimits;
  /** The stage's delivery settings; locally the environment may override them (tests run a whole schedule in seconds). */
  delivery: DeliverySettings;
  /** The stage's backfill settings; locally the environment may override them. */
  backfills: BackfillSettings;
  /** Where producers queue deliveries: the SQS queue on AWS, the local queue's endpoint in `npm start`; absent only in in-process unit tests (nothing is queued). */
  deliveryQueueUrl?: string;
  /** The chains this service follows (the stage's on AWS, `npm start`'s locally): a webhook on another is refused. */
  followedChains: PublicChainFacts[];
  /** A follower function's chain (CHAIN_ID) and the secret holding its RPC URL (CHAIN_RPC_URL_SECRET_ARN): on AWS, the follower's functions only. */
  followerChain?: { chainId: string; rpcUrlSecretArn?: string };
  /** Where the key that signs page tokens is (lib/config/page-token-key.ts). */
  pageTokenKey: PageTokenKeySource;
  /**
   * On AWS, for the operations that make API Gateway API keys: the name of each of the stage's usage
   * plans (USAGE_PLAN_NAME_STANDARD, ...), by which they find its id. Absent locally, where there is no API Gateway.
   */
  usagePlanNames?: Partial<Record<UsagePlanName, string>>;
  /**
   * Which loopback ports notifications may go to (receivers on this machine) in `npm start` outside
   * production; absent, none: on AWS loopback is the Lambda's own runtime API. Never other private addresses.
   */
  loopbackTargets?: LoopbackTargets;
}

export interface LocalGatewayBounds {
  /** GATEWAY_MAX_CONNECTIONS: connections open at once; one more is answered 503 and closed. */
  maxConnections: number;
  /** GATEWAY_HEADERS_TIMEOUT_SECONDS: from a connection's or request's start until its headers are in. */
  headersTimeoutSeconds: number;
  /** GATEWAY_REQUEST_TIMEOUT_SECONDS: until the whole request, body included, is in. */
  requestTimeoutSeconds: number;
  /** GATEWAY_KEEP_ALIVE_TIMEOUT_SECONDS: how long an idle kept-alive connection stays open. */
  keepAliveTimeoutSeconds: number;
}

/**
 * Generous for real use: a call with 10 000 addresses (about 450 KB) arrives in 30 s at 15 KB/s;
 * a flood of unfinished requests is closed within seconds, not Node's 60 s for headers and 300 s for a request.
 */
const DEFAULT_LOCAL_GATEWAY_BOUNDS: LocalGatewayBounds = { maxConnections: 1000, headersTimeoutSeconds: 10, requestTimeoutSeconds: 30, keepAliveTimeoutSeconds: 5 };

export interface LoopbackTargets {
  /**
   * The ports of the service's own parts (its API, store, dev chain), which `npm start` puts in its
   * processes' configuration (SERVICE_PORTS otherwise): never a target, or a tenant could read them through the delivery log.
   */
  servicePorts: number[];
  /** LOOPBACK_TARGET_PORTS: when set, the only other loopback ports allowed. */
  allowedPorts?: number[];
}

/**
 * On AWS the Secrets Manager secret the stack generates (PAGE_TOKEN_SECRET_ARN); locally the key
 * itself, hex-encoded (PAGE_TOKEN_KEY, which `npm start` generates and keeps in its data directory).
 */
export type PageTokenKeySource = { secretArn: string } | { hex?: string };

/** A setting in the environment that cannot be used: what `npm start` reports in one line, without a stack trace. */
export class ConfigurationError extends Error {
  override readonly name = 'ConfigurationError';
}

export const DEFAULT_TABLE_NAME = 'webhooks';
export const DEFAULT_DYNAMODB_PORT = 8000;
const DEFAULT_LEASE_SECONDS = 15;

let installed: RuntimeConfig | undefined;

/** This process's configuration: the one installed by useRuntimeConfig, else its environment's, read at the first call (a Lambda, a CLI). */
export function runtimeConfig(): RuntimeConfig {
  installed ??= readRuntimeConfig(process.env);
  return installed;
}

/**
 * Makes `config` this process's configuration: `npm start` installs the one it built, and each of its
 * processes the one it was handed, before anything reads it.
 */
export function useRuntimeConfig(config: RuntimeConfig): void {
  installed = config;
}

/** `stage`: the settings of the stage named by STAGE, unless given (a test of settings no stage has). */
export function readRuntimeConfig(env: NodeJS.ProcessEnv, stage: StageSettings = stageSettings(env.STAGE || 'local')): RuntimeConfig {
  const plan = stage.usagePlans[stage.defaultUsagePlan];
  return {
    stage,
    tableName: env.TABLE_NAME || DEFAULT_TABLE_NAME,
    dynamoDbEndpoint: env.DYNAMODB_ENDPOINT || (env.DYNAMODB_PORT ? `http://127.0.0.1:${env.DYNAMODB_PORT}` : undefined),
    dynamoDbCredentialFile: (!env.DYNAMODB_ENDPOINT && env.DYNAMODB_PORT && env.DYNAMODB_CREDENTIAL_FILE) || undefined,
    dynamoDbMaxAttempts: Number(env.DYNAMODB_MAX_ATTEMPTS) || 3,
    awsAccessKeyGiven: Boolean(env.AWS_ACCESS_KEY_ID),
    storeDeletesExpiredItems: !env.DYNAMODB_ENDPOINT && !env.DYNAMODB_PORT,
    region: env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1',
    localThrottle: {
      rateLimit: positiveNumber(env, 'THROTTLE_RATE_LIMIT') ?? plan.rateLimit,
      burstLimit: positiveNumber(env, 'THROTTLE_BURST_LIMIT') ?? plan.burstLimit,
    },
    localGatewayBounds: localGatewayBounds(env),
    authorizerCacheTtlSeconds: nonNegativeNumber(env, 'AUTHORIZER_CACHE_TTL_SECONDS') ?? stage.authorizerCacheTtlSeconds,
    leaseSeconds: positiveNumber(env, 'LEASE_SECONDS') ?? DEFAULT_LEASE_SECONDS,
    addressLimits: {
      perWebhook: positiveNumber(env, 'MAX_ADDRESSES_PER_WEBHOOK') ?? stage.addressLimits.perWebhook,
      perCall: positiveNumber(env, 'MAX_ADDRESSES_PER_CALL') ?? stage.addressLimits.perCall,
    },
    accountLimits: accountLimits(env, stage.accountLimits),
    delivery: deliverySettings(env, stage.delivery),
    backfills: {
      maxBlocks: positiveInteger(env, 'BACKFILL_MAX_BLOCKS') ?? stage.backfills.maxBlocks,
      runningPerAccount: positiveInteger(env, 'BACKFILL_RUNNING_PER_ACCOUNT') ?? stage.backfills.runningPerAccount,
      rpcRequestsPerSecond: positiveNumber(env, 'BACKFILL_RPC_REQUESTS_PER_SECOND') ?? stage.backfills.rpcRequestsPerSecond,
      concurrencyPerChain: positiveInteger(env, 'BACKFILL_CONCURRENCY_PER_CHAIN') ?? stage.backfills.concurrencyPerChain,
      turnSeconds: positiveNumber(env, 'BACKFILL_TURN_SECONDS') ?? stage.backfills.turnSeconds,
      keptPerWebhook: positiveInteger(env, 'BACKFILL_KEPT_PER_WEBHOOK') ?? stage.backfills.keptPerWebhook,
    },
    deliveryQueueUrl: env.DELIVERY_QUEUE_URL || undefined,
    followedChains: followedChainsFrom(env, stage.followedChains),
    followerChain: env.CHAIN_ID === undefined ? undefined : { chainId: env.CHAIN_ID, rpcUrlSecretArn: env.CHAIN_RPC_URL_SECRET_ARN },
    pageTokenKey: env.PAGE_TOKEN_SECRET_ARN ? { secretArn: env.PAGE_TOKEN_SECRET_ARN } : { hex: env.PAGE_TOKEN_KEY },
    usagePlanNames: usagePlanNames(env, stage),
    loopbackTargets: stage.production || env.AWS_LAMBDA_FUNCTION_NAME ? undefined : loopbackTargets(env),
  };
}

/** The environment variable that names a usage plan to the functions that make API Gateway keys (the stack sets it). */
export const usagePlanNameVariable = (plan: UsagePlanName) => `USAGE_PLAN_NAME_${plan.toUpperCase()}`;

function usagePlanNames(env: NodeJS.ProcessEnv, stage: StageSettings): Partial<Record<UsagePlanName, string>> | undefined {
  const names = Object.keys(stage.usagePlans)
    .map((plan) => [plan, env[usagePlanNameVariable(plan as UsagePlanName)]] as const)
    .filter(([, name]) => name);
  return names.length === 0 ? undefined : Object.fromEntries(names);
}

function localGatewayBounds(env: NodeJS.ProcessEnv): LocalGatewayBounds {
  const bounds = {
    maxConnections: positiveNumber(env, 'GATEWAY_MAX_CONNECTIONS') ?? DEFAULT_LOCAL_GATEWAY_BOUNDS.maxConnections,
    headersTimeoutSeconds: positiveNumber(env, 'GATEWAY_HEADERS_TIMEOUT_SECONDS') ?? DEFAULT_LOCAL_GATEWAY_BOUNDS.headersTimeoutSeconds,
    requestTimeoutSeconds: positiveNumber(env, 'GATEWAY_REQUEST_TIMEOUT_SECONDS') ?? DEFAULT_LOCAL_GATEWAY_BOUNDS.requestTimeoutSeconds,
    keepAliveTimeoutSeconds: positiveNumber(env, 'GATEWAY_KEEP_ALIVE_TIMEOUT_SECONDS') ?? DEFAULT_LOCAL_GATEWAY_BOUNDS.keepAliveTimeoutSeconds,
  };
  // Node refuses a server whose headers may take longer than the whole request.
  if (bounds.headersTimeoutSeconds > bounds.requestTimeoutSeconds) {
    throw new ConfigurationError(`GATEWAY_HEADERS_TIMEOUT_SECONDS (${bounds.headersTimeoutSeconds}) must not exceed GATEWAY_REQUEST_TIMEOUT_SECONDS (${bounds.requestTimeoutSeconds})`);
  }
  return bounds;
}

function loopbackTargets(env: NodeJS.ProcessEnv): LoopbackTargets {
  return { servicePorts: portList(env, 'SERVICE_PORTS') ?? [], allowedPorts: portList(env, 'LOOPBACK_TARGET_PORTS') };
}

/** A comma-separated list of port numbers, e.g. "4000,4001". */
function portList(env: NodeJS.ProcessEnv, name: string): number[] | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const ports = raw.split(',').map((part) => part.trim());
  if (ports.some((port) => !/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535)) {
    throw new ConfigurationError(`${name} must be comma-separated port numbers from 1 to 65535 (e.g. "4000,4001"), got '${raw}'`);
  }
  return ports.map(Number);
}

/**
 * The account's webhooks are counted in one item with an entry each (lib/store/account-usage.ts), about
 * 100 bytes: 3 000 of them keep it well under DynamoDB's 400 KB item limit.
 */
const MAX_WEBHOOKS_PER_ACCOUNT_LIMIT = 3_000;

function accountLimits(env: NodeJS.ProcessEnv, stage: AccountLimits): AccountLimits {
  const override = positiveNumber(env, 'MAX_WEBHOOKS_PER_ACCOUNT');
  const webhooksPerAccount = override ?? stage.webhooksPerAccount;
  if (webhooksPerAccount > MAX_WEBHOOKS_PER_ACCOUNT_LIMIT) {
    const source = override === undefined ? "the stage's accountLimits.webhooksPerAccount" : 'MAX_WEBHOOKS_PER_ACCOUNT';
    throw new ConfigurationError(`${source} must be at most ${MAX_WEBHOOKS_PER_ACCOUNT_LIMIT}, got ${webhooksPerAccount}`);
  }
  return {
    webhooksPerAccount,
    addressesPerAccount: positiveNumber(env, 'MAX_ADDRESSES_PER_ACCOUNT') ?? stage.addressesPerAccount,
    testNotificationsPerMinute: positiveNumber(env, 'MAX_TEST_NOTIFICATIONS_PER_MINUTE') ?? stage.testNotificationsPerMinute,
    recoversPerMinute: positiveNumber(env, 'MAX_RECOVERS_PER_MINUTE') ?? stage.recoversPerMinute,
    retriesPerMinute: positiveNumber(env, 'MAX_RETRIES_PER_MINUTE') ?? stage.retriesPerMinute,
    testNotificationsPerMinutePerAccount:
      positiveNumber(env, 'MAX_TEST_NOTIFICATIONS_PER_MINUTE_PER_ACCOUNT') ?? stage.testNotificationsPerMinutePerAccount,
    recoversPerMinutePerAccount: positiveNumber(env, 'MAX_RECOVERS_PER_MINUTE_PER_ACCOUNT') ?? stage.recoversPerMinutePerAccount,
    retriesPerMinutePerAccount: positiveNumber(env, 'MAX_RETRIES_PER_MINUTE_PER_ACCOUNT') ?? stage.retriesPerMinutePerAccount,
    apiKeysPerAccount: positiveInteger(env, 'MAX_API_KEYS_PER_ACCOUNT') ?? stage.apiKeysPerAccount,
    apiKeyCreationsPerMinute: positiveInteger(env, 'MAX_API_KEY_CREATIONS_PER_MINUTE') ?? stage.apiKeyCreationsPerMinute,
  };
}

function deliverySettings(env: NodeJS.ProcessEnv, stage: DeliverySettings): DeliverySettings {
  return {
    ...stage,
    retryScheduleSeconds: retrySchedule(env) ?? stage.retryScheduleSeconds,
    attemptTimeoutSeconds: positiveNumber(env, 'DELIVERY_TIMEOUT_SECONDS') ?? stage.attemptTimeoutSeconds,
    secretGraceSeconds: nonNegativeNumber(env, 'DELIVERY_SECRET_GRACE_SECONDS') ?? stage.secretGraceSeconds,
    sweepGraceSeconds: nonNegativeNumber(env, 'DELIVERY_SWEEP_GRACE_SECONDS') ?? stage.sweepGraceSeconds,
    retentionDays: positiveNumber(env, 'DELIVERY_RETENTION_DAYS') ?? stage.retentionDays,
    concurrency: {
      ...stage.concurrency,
      perAccount: positiveInteger(env, 'DELIVERY_CONCURRENCY_PER_ACCOUNT') ?? stage.concurrency.perAccount,
      perHost: positiveInteger(env, 'DELIVERY_CONCURRENCY_PER_HOST') ?? stage.concurrency.perHost,
    },
    destinationRatePerSecond: positiveInteger(env, 'DELIVERY_DESTINATION_RATE_PER_SECOND') ?? stage.destinationRatePerSecond,
  };
}

/** DELIVERY_RETRY_SCHEDULE: the seconds before attempts 2..N, comma-separated; empty means a single attempt. */
function retrySchedule(env: NodeJS.ProcessEnv): number[] | undefined {
  const raw = env.DELIVERY_RETRY_SCHEDULE;
  if (raw === undefined) return undefined;
  if (raw.trim() === '') return [];
  const parts = raw.split(',').map((part) => part.trim());
  const delays = parts.map(Number);
  if (parts.some((part) => part === '') || delays.some((delay) => !Number.isFinite(delay) || delay < 0)) {
    throw new ConfigurationError(`DELIVERY_RETRY_SCHEDULE must be comma-separated non-negative seconds (e.g. "10,60,300"), got '${raw}'`);
  }
  return delays;
}

function positiveInteger(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const value = positiveNumber(env, name);
  if (value !== undefined && !Number.isInteger(value)) throw new ConfigurationError(`${name} must be a positive integer, got '${env[name]}'`);
  return value;
}

function positiveNumber(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const value = nonNegativeNumber(env, name);
  if (value === 0) throw new ConfigurationError(`${name} must be a positive number`);
  return value;
}

function nonNegativeNumber(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new ConfigurationError(`${name} must be a non-negative number, got '${raw}'`);
  return value;
}
