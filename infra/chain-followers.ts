/**
 * The stack's chain followers (docs/chain-follower.md): per followed chain, the secret holding its
 * RPC URL, its follower function every minute, its backfill runner every minute (docs/backfills.md),
 * its operator function for quarantined blocks, and the alarms on its lag, stall, quarantines and
 * transactions notified without their internal transactions.
 */
import { Duration, SecretValue, type RemovalPolicy, type Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import {
  CHAIN_LAG_METRIC,
  CHAIN_METRICS_NAMESPACE,
  CHAIN_METRICS_SERVICE,
  CHAIN_QUARANTINE_METRIC,
  CHAIN_STALLED_METRIC,
  CHAIN_TRACES_OMITTED_METRIC,
  KNOWN_CHAINS,
} from '../lib/config/chains';
import type { StageSettings } from '../lib/config/stages';
import { chainFunctionName } from '../lib/entry-point';
import type { IndexName, TableAction } from '../lib/routes';
import { GSI1, GSI2 } from '../lib/store/table';
import { everyMinute } from './every-minute';

/**
 * What a chain's three functions, which share a role, are granted together: the follower's and the
 * backfill runner's calls below (the quarantine function's are the follower's), and SendMessage.
 */
const CHAIN_GRANTS = {
  tableActions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:Query', 'dynamodb:BatchGetItem', 'dynamodb:BatchWriteItem'] as TableAction[],
  queriedIndexes: [GSI1.indexName, GSI2.indexName] as IndexName[],
  queuesDeliveries: true,
};
/**
 * A chain's follower: reads the chain's checkpoint, lease and token metadata, the address index
 * (batch reads, queries of watchers and gsi2's inactive webhooks), whether gsi2 has a webhook that
 * wants the chain's traces, webhooks and secrets; records messages (their bodies in batch writes
 * after a batch read of which are recorded, their states in conditional puts) and queues them.
 */
export const FOLLOW_CHAIN = { entry: 'functions/follow-chain.ts', ...CHAIN_GRANTS, timeoutSeconds: 60 };
/**
 * What an operator invokes to list a chain's quarantined blocks or take one again: reads them
 * (Query), then records a block's notifications as the follower does and deletes its record.
 */
export const QUARANTINED_BLOCKS = { ...FOLLOW_CHAIN, entry: 'functions/quarantined-blocks.ts' };
/**
 * A chain's backfill runner (lib/backfills/runner.ts): its lease (PutItem) and the chain's running
 * backfills (Query of gsi1); each backfill and its webhook read (GetItem), its checkpoint moved, the
 * backfill ended and its account's running slot freed (UpdateItem); the blocks recorded through the
 * follower's `take` (the address index's batch reads, queries of watchers and of gsi2's inactive
 * webhooks, a watch head's watchers saved or the head deleted, token metadata read and put, messages'
 * bodies batch-written and their states put under a condition, then queued); a block quarantined
 * for the webhook (PutItem). Every run ends
 * before the next minute's starts, so that one runner works at a time without waiting for the lease.
 */
export const RUN_BACKFILLS = { entry: 'functions/run-backfills.ts', ...CHAIN_GRANTS, timeoutSeconds: 60 };
/** Blocks behind the head, for 10 minutes, that raise a chain's lag alarm. */
const CHAIN_LAG_ALARM_BLOCKS = 50;
/**
 * Seconds a follower's checkpoint stays still while the chain has blocks after it that raise its stall
 * alarm: a follower is stalled after a minute (lib/chains/follow-loop.ts), and a block that keeps
 * failing is quarantined within about that; two minutes is a block no step gets past.
 */
const CHAIN_STALL_ALARM_SECONDS = 120;

export interface ChainFollowersProps {
  stage: StageSettings;
  /** The stack's function of one operation: its role on the table and the queue, its error alarm. */
  operationFunction: (name: string, spec: typeof FOLLOW_CHAIN & { role: iam.IRole; logGroup: logs.ILogGroup; errorsAlarm: string }) => NodejsFunction;
  /** A log group of the stage's, with its retention. */
  logGroup: (id: string, logGroupName: string) => logs.ILogGroup;
  resourceName: (suffix: string) => string;
  removalPolicy: RemovalPolicy;
}

/**
 * One follower function and one backfill runner per chain, every minute; each run works until just
 * before its timeout, and the chain's two leases in the table keep overlapping runs to one follower
 * and one runner at a time. Made in the stack's own scope: in a construct of their own the resources
 * would have new logical ids, and a new RPC URL secret would lose the provider's URL an operator put
 * in it.
 */
export function addChainFollowers(stack: Stack, { stage, operationFunction, logGroup, resourceName, removalPolicy }: ChainFollowersProps): void {
  for (const chainId of stage.followedChains) {
    const rpcUrl = new secretsmanager.Secret(stack, `Chain${chainId}RpcUrl`, {
      secretName: resourceName(`chain-${chainId}-rpc-url`),
      description: `JSON-RPC URL of chain ${chainId} (the public endpoint until you put your provider's URL here)`,
      secretStringValue: SecretValue.unsafePlainText(KNOWN_CHAINS[chainId]!.publicRpcUrl),
      removalPolicy,
    });
    // A chain's three functions share a role (the grants of each are the chain's), a log group and an errors alarm: each
    // followed chain adds as few resources as it can to a stack CloudFormation caps at 500.
    const shared = {
      role: new iam.Role(stack, `Chain${chainId}FunctionsRole`, { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') }),
      logGroup: logGroup(`Chain${chainId}Logs`, `/aws/lambda/${resourceName(`chain-${chainId}`)}`),
      errorsAlarm: `chain-${chainId}`,
    };
    // Writing to their own log group alone, where the managed basic execution role would allow any.
    shared.logGroup.grantWrite(shared.role);
    const follower = operationFunction(chainFunctionName('followChain', chainId), { ...FOLLOW_CHAIN, ...shared });
    const quarantine = operationFunction(chainFunctionName('quarantinedBlocks', chainId), { ...QUARANTINED_BLOCKS, ...shared });
    const backfills = operationFunction(chainFunctionName('runBackfills', chainId), { ...RUN_BACKFILLS, ...shared });
    for (const fn of [follower, quarantine, backfills]) fn.addEnvironment('CHAIN_ID', chainId).addEnvironment('CHAIN_RPC_URL_SECRET_ARN', rpcUrl.secretArn);
    // GetSecretValue alone: grantRead adds DescribeSecret, which the code never sends.
    shared.role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [rpcUrl.secretArn] }));
    everyMinute(
      stack,
      `Chain${chainId}FollowerSchedule`,
      { ruleName: resourceName(`follow-chain-${chainId}`), description: `Follows chain ${chainId} and records the notifications of its blocks` },
      follower,
    );
    everyMinute(
      stack,
      `Chain${chainId}BackfillSchedule`,
      { ruleName: resourceName(`run-backfills-${chainId}`), description: `Runs the backfills of chain ${chainId}: past blocks' notifications for the webhooks that asked` },
      backfills,
    );
    new cloudwatch.Alarm(stack, `Chain${chainId}Lag`, {
      alarmName: resourceName(`chain-${chainId}-lag`),
      alarmDescription: `The follower of chain ${chainId} is more than ${CHAIN_LAG_ALARM_BLOCKS} blocks behind the head, or not reporting`,
      metric: chainMetric(chainId, CHAIN_LAG_METRIC, 'Minimum'),
      threshold: CHAIN_LAG_ALARM_BLOCKS,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 2,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
    });
    new cloudwatch.Alarm(stack, `Chain${chainId}Stalled`, {
      alarmName: resourceName(`chain-${chainId}-stalled`),
      alarmDescription: `The follower of chain ${chainId} has not moved its checkpoint for ${CHAIN_STALL_ALARM_SECONDS} s while the chain has blocks after it: stuck on a block (GET /v1/chains shows its state and last error)`,
      metric: chainMetric(chainId, CHAIN_STALLED_METRIC, 'Maximum'),
      threshold: CHAIN_STALL_ALARM_SECONDS,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      // A follower that stops reporting is the lag alarm's.
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    new cloudwatch.Alarm(stack, `Chain${chainId}TracesOmitted`, {
      alarmName: resourceName(`chain-${chainId}-traces-omitted`),
      alarmDescription: `The follower of chain ${chainId} notified transactions without their internal transactions: their traces could not be had (docs/chain-follower.md)`,
      metric: chainMetric(chainId, CHAIN_TRACES_OMITTED_METRIC, 'Sum'),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    new cloudwatch.Alarm(stack, `Chain${chainId}Quarantine`, {
      alarmName: resourceName(`chain-${chainId}-quarantine`),
      alarmDescription: `The follower of chain ${chainId} quarantined a block: its notifications wait for an operator (docs/chain-follower.md)`,
      metric: chainMetric(chainId, CHAIN_QUARANTINE_METRIC, 'Sum'),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  }
}

/** A metric the follower of the chain publishes (functions/follow-chain.ts), over 5 minutes. */
const chainMetric = (chainId: string, metricName: string, statistic: string) =>
  new cloudwatch.Metric({
    namespace: CHAIN_METRICS_NAMESPACE,
    metricName,
    dimensionsMap: { service: CHAIN_METRICS_SERVICE, chainId },
    period: Duration.minutes(5),
    statistic,
  });
