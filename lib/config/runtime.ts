import { stageSettings, type DeliverySettings, type StageSettings, type UsagePlanSettings } from './stages';

/** What a process (Lambda, local gateway, keys CLI) needs to know, read once from its environment. */
export interface RuntimeConfig {
  stage: StageSettings;
  tableName: string;
  /** Absent: the AWS SDK's default endpoint for the region. */
  dynamoDbEndpoint?: string;
  region: string;
  /** Throttle applied by the local gateway; on AWS the usage plans do it. */
  localThrottle: UsagePlanSettings;
  authorizerCacheTtlSeconds: number;
  /**
   * How long a lease on a webhook's addresses or on a purge lasts without renewal: how long a change
   * or purge cut off by a crash waits before another process completes it.
   */
  leaseSeconds: number;
  /** The stage's limits on watched addresses; locally the environment may lower or raise them (tests). */
  addressLimits: { perWebhook: number; perCall: number };
  /** The stage's delivery settings; locally the environment may override them (tests run a whole schedule in seconds). */
  delivery: DeliverySettings;
  /** Where new and retried messages are queued on AWS; absent locally, where the dispatcher runs in the process. */
  deliveryQueueUrl?: string;
  /**
   * Notifications may go to loopback addresses (receivers on this machine) in `npm start` outside
   * production; never on AWS, where loopback is the Lambda's own runtime API; never to other private addresses.
   */
  allowLoopbackTargets: boolean;
}

/** A setting in the environment that cannot be used: what `npm start` reports in one line, without a stack trace. */
export class ConfigurationError extends Error {
  override readonly name = 'ConfigurationError';
}

export const DEFAULT_TABLE_NAME = 'webhooks';
export const DEFAULT_DYNAMODB_PORT = 8000;
const DEFAULT_LEASE_SECONDS = 15;

let cached: RuntimeConfig | undefined;

export function runtimeConfig(): RuntimeConfig {
  cached ??= readRuntimeConfig(process.env);
  return cached;
}

export function readRuntimeConfig(env: NodeJS.ProcessEnv): RuntimeConfig {
  const stage = stageSettings(env.STAGE || 'local');
  const plan = stage.usagePlans[stage.defaultUsagePlan];
  return {
    stage,
    tableName: env.TABLE_NAME || DEFAULT_TABLE_NAME,
    dynamoDbEndpoint: env.DYNAMODB_ENDPOINT || (env.DYNAMODB_PORT ? `http://127.0.0.1:${env.DYNAMODB_PORT}` : undefined),
    region: env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1',
    localThrottle: {
      rateLimit: positiveNumber(env, 'THROTTLE_RATE_LIMIT') ?? plan.rateLimit,
      burstLimit: positiveNumber(env, 'THROTTLE_BURST_LIMIT') ?? plan.burstLimit,
    },
    authorizerCacheTtlSeconds: nonNegativeNumber(env, 'AUTHORIZER_CACHE_TTL_SECONDS') ?? stage.authorizerCacheTtlSeconds,
    leaseSeconds: positiveNumber(env, 'LEASE_SECONDS') ?? DEFAULT_LEASE_SECONDS,
    addressLimits: {
      perWebhook: positiveNumber(env, 'MAX_ADDRESSES_PER_WEBHOOK') ?? stage.addressLimits.perWebhook,
      perCall: positiveNumber(env, 'MAX_ADDRESSES_PER_CALL') ?? stage.addressLimits.perCall,
    },
    delivery: deliverySettings(env, stage.delivery),
    deliveryQueueUrl: env.DELIVERY_QUEUE_URL || undefined,
    allowLoopbackTargets: !stage.production && !env.AWS_LAMBDA_FUNCTION_NAME,
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
