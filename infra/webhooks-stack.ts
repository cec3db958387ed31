import path from 'node:path';
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import * as apigateway from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { usagePlanNameVariable } from '../lib/config/runtime';
import { BACKGROUND_FUNCTIONS } from '../lib/entry-point';
import type { StageSettings, UsagePlanName } from '../lib/config/stages';
import { CONSUMER_BATCH_SIZE, consumerBatches, consumerTimeoutSeconds, MAX_QUEUE_DELAY_SECONDS, MAX_QUEUE_RECEIVES, queueVisibilitySeconds } from '../lib/deliveries/queue';
import { errorBody, methodNotAllowedMessage } from '../lib/errors';
import { OPENAPI_DOCUMENT_PATH, openApiDocument } from '../lib/openapi/document';
import { API_KEY_HEADER } from '../lib/keys/authorize';
import { STAGE_TAG } from '../lib/keys/gateway-keys';
import { HEALTH_CHECK, routeList, type IndexName, type Route, type TableAction } from '../lib/routes';
import { apiKeyKey, EXPIRES_AT_ATTRIBUTE, GSI1, GSI2, GSI3, TABLE_KEYS, tableDefinition } from '../lib/store/table';
import { addApiRateLimit } from './api-rate-limit';
import { LAMBDA_BUNDLING, LAMBDA_RUNTIME } from './bundling';
import { everyMinute } from './every-minute';
import { acknowledgeDesignFindings } from './nag-acknowledgements';
import { addChainFollowers } from './chain-followers';
import { ConsoleHosting } from './console-hosting';
import { CONSOLE_DIST } from './console-build';
import { gatewayResponses, gatewayResponseTemplate } from './gateway-responses';
import { STACK_OUTPUTS, stackNameFor } from './stack-outputs';

const PROJECT_ROOT = path.resolve(__dirname, '..');

/** What the stack needs to know of a function beyond its name; a route is one. */
interface FunctionSpec {
  entry: string;
  /** Granted on the table. */
  tableActions: readonly TableAction[];
  /** Query is granted on these indexes, and on no other. */
  queriedIndexes?: readonly IndexName[];
  usesPageTokens?: boolean;
  /** Sends to the delivery queue. */
  queuesDeliveries?: boolean;
  timeoutSeconds?: number;
  /** Shared with other functions (a chain's); else one of its own. */
  role?: iam.IRole;
  /** Shared with other functions (a chain's); else `/aws/lambda/<its name>`. */
  logGroup?: logs.ILogGroup;
  /** The functions whose unhandled errors raise one alarm together (a chain's); else the stage's functions, ten to an alarm. */
  errorsAlarm?: string;
}

/** Metrics one alarm's math may combine: CloudWatch's limit. */
const METRICS_PER_ALARM = 10;

/** Its reads and its one write are statements of their own, narrowed to API key items by conditions (authorizerKeyItems). */
const AUTHORIZER: FunctionSpec = { entry: 'functions/authorizer.ts', tableActions: [] };
/** Completes address changes a crash cut off, and purges deleted webhooks' addresses and backfills. */
export const MAINTENANCE = {
  entry: 'functions/maintain-addresses.ts',
  tableActions: [
    'dynamodb:GetItem',
    'dynamodb:PutItem',
    'dynamodb:UpdateItem',
    'dynamodb:DeleteItem',
    'dynamodb:Query',
    'dynamodb:BatchGetItem',
    'dynamodb:BatchWriteItem',
  ] as TableAction[],
  queriedIndexes: [GSI1.indexName],
};
/**
 * The delivery queue's consumer: reads a message with its webhook and secret, takes slots of its
 * account's and host's pools and reads and records its endpoint's health, claims and records
 * attempts, queues the next (and puts off what is refused a slot).
 */
export const DELIVERY_DISPATCH = {
  entry: 'functions/dispatch-deliveries.ts',
  tableActions: [
    'dynamodb:GetItem',
    'dynamodb:BatchGetItem',
    'dynamodb:Query',
    'dynamodb:PutItem',
    'dynamodb:UpdateItem',
    'dynamodb:DeleteItem',
  ] as TableAction[],
  queuesDeliveries: true,
  batchSize: CONSUMER_BATCH_SIZE,
};
/**
 * Queues the pending messages whose due time passed with no attempt (the due-time index), and runs
 * the resume jobs of reactivated webhooks (the table's RESUMES partition, gsi2 and the messages it
 * names, the webhook's item).
 */
export const DELIVERY_SWEEP = {
  entry: 'functions/sweep-deliveries.ts',
  tableActions: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'] as TableAction[],
  queriedIndexes: [GSI2.indexName, GSI3.indexName],
  queuesDeliveries: true,
  timeoutSeconds: 60,
};
/**
 * The authorizer's reads and its one write, of API key items alone: it reads the key's item (and, for a
 * key made by another, the items of the keys it descends from, in one batch), and writes lastUsedAt on
 * it (lib/store/api-keys.ts markApiKeyUsed, whose condition also names the key attribute), returning
 * nothing. Should its code be subverted, it can read no account's shared secret nor webhooks, and change
 * no other attribute, nor any item but an API key's.
 */
function authorizerKeyItems(tableArn: string): iam.PolicyStatement[] {
  const apiKeyItems = { 'dynamodb:LeadingKeys': [`${apiKeyKey('').pk}*`] };
  return [
    new iam.PolicyStatement({ actions: ['dynamodb:GetItem', 'dynamodb:BatchGetItem'], resources: [tableArn], conditions: { 'ForAllValues:StringLike': apiKeyItems } }),
    new iam.PolicyStatement({
      actions: ['dynamodb:UpdateItem'],
      resources: [tableArn],
      conditions: {
        'ForAllValues:StringLike': apiKeyItems,
        'ForAllValues:StringEquals': { 'dynamodb:Attributes': [TABLE_KEYS.partitionKey, TABLE_KEYS.sortKey, 'lastUsedAt'] },
        StringEqualsIfExists: { 'dynamodb:ReturnValues': ['NONE', 'UPDATED_OLD', 'UPDATED_NEW'] },
      },
    }),
  ];
}

/** A gsi attribute type in `tableDefinition` as the CDK names it. */
const ATTRIBUTE_TYPES = { S: dynamodb.AttributeType.STRING } as const;

export interface WebhooksStackProps extends StackProps {
  stage: StageSettings;
  /** Subscribed to the stage's alarm topic (`-c alarmEmail=`): AWS asks it to confirm first. */
  alarmEmail?: string;
}

/**
 * One stage of the service: the table, one Lambda per operation behind a REST API built from the
 * same route list as the local gateway, a REQUEST authorizer reading `x-service-api-key`, and usage
 * plans that throttle and meter callers by that key.
 */
export class WebhooksStack extends Stack {
  readonly api: apigateway.RestApi;
  readonly table: dynamodb.Table;

  constructor(scope: Construct, id: string, props: WebhooksStackProps) {
    super(scope, id, props);
    const { stage } = props;
    const resourceName = (suffix: string) => `${stackNameFor(stage.name)}-${suffix}`;
    const removalPolicy = stage.production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;

    // AWS-managed KMS key: encryption at rest with key use audited in CloudTrail, without a key
    // policy of our own to get wrong; a customer-managed key adds nothing this service uses.
    this.table = new dynamodb.Table(this, 'Table', {
      tableName: resourceName('table'),
      partitionKey: { name: TABLE_KEYS.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: TABLE_KEYS.sortKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      deletionProtection: stage.production,
      // Finished messages and attempt slots, in Unix seconds; the embedded store has no TTL: a local sweep
      // deletes messages, and a slot whose lease has ended is taken over.
      timeToLiveAttribute: EXPIRES_AT_ATTRIBUTE,
      removalPolicy,
    });
    for (const index of globalSecondaryIndexes()) this.table.addGlobalSecondaryIndex(index);
    const indexArn = (indexName: string) => `${this.table.tableArn}/index/${indexName}`;

    // 64 characters from 0-9a-f: a 32-byte HMAC key, hex-encoded.
    const pageTokenSecret = new secretsmanager.Secret(this, 'PageTokenKey', {
      secretName: resourceName('page-token-key'),
      description: 'HMAC key that signs list page tokens (hex)',
      generateSecretString: {
        passwordLength: 64,
        excludeUppercase: true,
        excludePunctuation: true,
        includeSpace: false,
        excludeCharacters: 'ghijklmnopqrstuvwxyz',
      },
      removalPolicy,
    });

    // A message lost from the queue, or moved to its dead-letter queue, is not lost: the message is in
    // the table before it is queued, and the sweep of the due-time index queues it again.
    const deliveryDeadLetters = new sqs.Queue(this, 'DeliveryDeadLetterQueue', {
      queueName: resourceName('deliveries-dlq'),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    const dispatchTimeoutSeconds = consumerTimeoutSeconds(stage.delivery.attemptTimeoutSeconds);
    // A fair queue with no property of its own: a standard queue whose messages carry a MessageGroupId
    // (their account, lib/deliveries/sqs-queue.ts) is one.
    const deliveryQueue = new sqs.Queue(this, 'DeliveryQueue', {
      queueName: resourceName('deliveries'),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: Duration.seconds(queueVisibilitySeconds(stage.delivery.attemptTimeoutSeconds)),
      retentionPeriod: Duration.days(4),
      deadLetterQueue: { queue: deliveryDeadLetters, maxReceiveCount: MAX_QUEUE_RECEIVES },
    });

    const logGroup = (id: string, logGroupName: string) =>
      new logs.LogGroup(this, id, { logGroupName, retention: stage.logRetentionDays as logs.RetentionDays, removalPolicy });
    /** The functions whose errors raise alarms together, by group. */
    const erring = new Map<string, { name: string; fn: lambda.IFunction }[]>();
    const operationFunction = (name: string, spec: FunctionSpec) => {
      const { entry, tableActions, usesPageTokens = false, queuesDeliveries = false, timeoutSeconds = stage.lambdaTimeoutSeconds } = spec;
      const fn = new NodejsFunction(this, `${name}Function`, {
        functionName: resourceName(name),
        entry: path.join(PROJECT_ROOT, entry),
        handler: 'handler',
        projectRoot: PROJECT_ROOT,
        depsLockFilePath: path.join(PROJECT_ROOT, 'package-lock.json'),
        runtime: LAMBDA_RUNTIME,
        architecture: lambda.Architecture.ARM_64,
        memorySize: stage.lambdaMemoryMb,
        timeout: Duration.seconds(timeoutSeconds),
        tracing: lambda.Tracing.ACTIVE,
        role: spec.role,
        logGroup: spec.logGroup ?? logGroup(`${name}Logs`, `/aws/lambda/${resourceName(name)}`),
        environment: {
          STAGE: stage.name,
          TABLE_NAME: this.table.tableName,
          // A stack trace names the source's files and lines, not the minified bundle's.
          NODE_OPTIONS: '--enable-source-maps',
          POWERTOOLS_SERVICE_NAME: 'webhooks',
          POWERTOOLS_LOG_LEVEL: stage.production ? 'INFO' : 'DEBUG',
          ...(usesPageTokens ? { PAGE_TOKEN_SECRET_ARN: pageTokenSecret.secretArn } : {}),
          ...(queuesDeliveries ? { DELIVERY_QUEUE_URL: deliveryQueue.queueUrl } : {}),
        },
        bundling: {
          ...LAMBDA_BUNDLING,
          format: OutputFormat.CJS,
          // esbuild from node_modules: synth needs neither Docker nor network.
          forceDockerBundling: false,
        },
      });
      if (tableActions.length > 0) fn.addToRolePolicy(new iam.PolicyStatement({ actions: [...tableActions], resources: [this.table.tableArn] }));
      if (spec.queriedIndexes?.length) {
        fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['dynamodb:Query'], resources: spec.queriedIndexes.map(indexArn) }));
      }
      // GetSecretValue alone: grantRead adds DescribeSecret, which the code never sends.
      if (usesPageTokens) fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [pageTokenSecret.secretArn] }));
      // SendMessage alone: grantSendMessages adds GetQueueAttributes and GetQueueUrl, which the code never sends.
      if (queuesDeliveries) fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: [deliveryQueue.queueArn] }));
      const group = spec.errorsAlarm ?? 'function';
      erring.set(group, [...(erring.get(group) ?? []), { name, fn }]);
      return fn;
    };

    // Once a minute; each run works until shortly before its timeout. Overlapping runs are safe: every
    // change and purge they take up is held by a lease in the table.
    everyMinute(
      this,
      'MaintenanceSchedule',
      { ruleName: resourceName('maintenance'), description: 'Completes interrupted address changes and purges deleted webhooks' },
      operationFunction(BACKGROUND_FUNCTIONS.maintainAddresses, { ...MAINTENANCE, timeoutSeconds: stage.maintenanceTimeoutSeconds }),
    );

    // Without a VPC: the dispatcher reaches receivers on the internet directly.
    const dispatcher = operationFunction(BACKGROUND_FUNCTIONS.dispatchDeliveries, { ...DELIVERY_DISPATCH, timeoutSeconds: dispatchTimeoutSeconds });
    dispatcher.addEventSource(
      new SqsEventSource(deliveryQueue, {
        batchSize: DELIVERY_DISPATCH.batchSize,
        maxBatchingWindow: Duration.seconds(1),
        reportBatchItemFailures: true,
        // Each invocation attempts its whole batch at once: this many keeps to the stage's limit on
        // attempts under way, with room for one account's slow ones. Unlike reserved concurrency, it
        // never throttles a received batch (which would count toward maxReceiveCount).
        maxConcurrency: Math.min(1000, Math.max(2, consumerBatches(stage.delivery.concurrency))),
      }),
    );
    // Each run passes over the due-time index until shortly before its timeout; overlapping runs are
    // safe, as each message it takes up is given a new sweep time under a condition.
    everyMinute(
      this,
      'DeliverySweepSchedule',
      { ruleName: resourceName('delivery-sweep'), description: 'Queues pending messages that no queue message brought to an attempt' },
      operationFunction(BACKGROUND_FUNCTIONS.sweepDeliveries, DELIVERY_SWEEP),
    );
    new cloudwatch.Alarm(this, 'DeliveryDeadLetters', {
      alarmName: resourceName('delivery-dead-letters'),
      alarmDescription: 'Queued deliveries failed in the store on every receive; the sweep still takes their messages up',
      metric: deliveryDeadLetters.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' }),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    new cloudwatch.Alarm(this, 'DeliveryBacklog', {
      alarmName: resourceName('delivery-backlog'),
      alarmDescription: 'Queued deliveries wait longer than 5 minutes beyond their delay',
      metric: deliveryQueue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(5), statistic: 'Maximum' }),
      // A message queued with a delay (a retry) may count its age from when it was sent.
      threshold: MAX_QUEUE_DELAY_SECONDS + 300,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    addChainFollowers(this, { stage, operationFunction, logGroup, resourceName, removalPolicy });

    const authorizerFunction = operationFunction(BACKGROUND_FUNCTIONS.authorizer, AUTHORIZER);
    for (const statement of authorizerKeyItems(this.table.tableArn)) authorizerFunction.addToRolePolicy(statement);
    const authorizer = new apigateway.RequestAuthorizer(this, 'ApiKeyAuthorizer', {
      authorizerName: resourceName('api-key'),
      handler: authorizerFunction,
      identitySources: [apigateway.IdentitySource.header(API_KEY_HEADER)],
      resultsCacheTtl: Duration.seconds(stage.authorizerCacheTtlSeconds),
    });

    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', {
      logGroupName: `/aws/apigateway/${resourceName('api')}`,
      retention: stage.logRetentionDays as logs.RetentionDays,
      removalPolicy,
    });
    this.api = new apigateway.RestApi(this, 'Api', {
      restApiName: resourceName('api'),
      description: `Webhook management API (${stage.name})`,
      endpointTypes: [apigateway.EndpointType.REGIONAL],
      // API keys come from the authorizer's usageIdentifierKey, i.e. from x-service-api-key.
      apiKeySourceType: apigateway.ApiKeySourceType.AUTHORIZER,
      cloudWatchRole: true,
      cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN,
      deployOptions: {
        stageName: stage.name,
        tracingEnabled: true,
        metricsEnabled: true,
        // Execution logs of failures only (a Lambda that did not answer, an authorizer error), never request or response bodies.
        loggingLevel: apigateway.MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        accessLogDestination: new apigateway.LogGroupLogDestination(accessLogs),
        accessLogFormat: apigateway.AccessLogFormat.jsonWithStandardFields({
          caller: false,
          httpMethod: true,
          ip: true,
          protocol: true,
          requestTime: true,
          resourcePath: true,
          responseLength: true,
          status: true,
          user: false,
        }),
      },
      defaultMethodOptions: { apiKeyRequired: true, authorizer, authorizationType: apigateway.AuthorizationType.CUSTOM },
    });

    const gatewayKeyFunctions: { fn: lambda.Function; calls: NonNullable<Route['managesGatewayKeys']> }[] = [];
    this.addRoutes(routeList, (route) => {
      const fn = operationFunction(route.operationId, route);
      if (route.managesGatewayKeys) gatewayKeyFunctions.push({ fn, calls: route.managesGatewayKeys });
      return fn;
    });
    this.addKeylessPaths();

    for (const response of gatewayResponses) {
      this.api.addGatewayResponse(`GatewayResponse${response.type}`, {
        type: (apigateway.ResponseType as unknown as Record<string, apigateway.ResponseType>)[response.type]!,
        statusCode: String(response.statusCode),
        responseHeaders: Object.fromEntries(
          Object.entries({ 'Content-Type': 'application/json', ...response.headers }).map(([name, value]) => [name, `'${value}'`]),
        ),
        templates: { 'application/json': gatewayResponseTemplate(response) },
      });
    }

    const usagePlans = Object.entries(stage.usagePlans).map(([plan, settings]) => {
      const usagePlan = this.api.addUsagePlan(`UsagePlan-${plan}`, {
        name: resourceName(plan),
        description: `${plan} plan of ${stage.name}`,
        throttle: { rateLimit: settings.rateLimit, burstLimit: settings.burstLimit },
        quota: settings.quota && { limit: settings.quota.limit, period: apigateway.Period[settings.quota.period] },
        apiStages: [{ api: this.api, stage: this.api.deploymentStage }],
      });
      return { plan: plan as UsagePlanName, id: usagePlan.usagePlanId, name: resourceName(plan) };
    });
    for (const { fn, calls } of gatewayKeyFunctions) this.letManageGatewayKeys(fn, calls, usagePlans, stage.name);
    if (stage.waf) addApiRateLimit(this, this.api.deploymentStage, resourceName('api'), stage.waf.rateLimitPer5Minutes);

    new cloudwatch.Alarm(this, 'Api5xx', {
      alarmName: resourceName('api-5xx'),
      alarmDescription: 'The API answered 5xx',
      metric: this.api.metricServerError({ period: Duration.minutes(5) }),
      threshold: 5,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    // The console and, on its origin, the API's paths (docs/console.md#on-aws); app.ts builds console/dist first.
    const consoleHosting = new ConsoleHosting(this, 'Console', {
      assets: CONSOLE_DIST,
      api: this.api,
      apiPaths: ['/v1/*', HEALTH_CHECK.path, OPENAPI_DOCUMENT_PATH],
      logRetentionDays: stage.logRetentionDays,
    });

    for (const [group, functions] of erring) this.addErrorAlarms(group, functions, resourceName);
    acknowledgeDesignFindings(this, stage);

    // Every alarm of the stage, raised and cleared, to one topic: the email named at deploy, or any subscriber added later.
    const alarms = new sns.Topic(this, 'Alarms', { topicName: resourceName('alarms'), displayName: `webhooks ${stage.name} alarms`, enforceSSL: true });
    if (props.alarmEmail) alarms.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
    const notify = new cloudwatchActions.SnsAction(alarms);
    for (const construct of this.node.findAll()) {
      if (!(construct instanceof cloudwatch.Alarm)) continue;
      construct.addAlarmAction(notify);
      construct.addOkAction(notify);
    }
    new CfnOutput(this, STACK_OUTPUTS.alarmTopicArn, { value: alarms.topicArn, description: 'Where every alarm of the stage is sent' });

    new CfnOutput(this, STACK_OUTPUTS.apiUrl, { value: this.api.url, description: 'Base URL of the API' });
    new CfnOutput(this, STACK_OUTPUTS.consoleUrl, { value: consoleHosting.url, description: 'The console, and the API on its origin' });
    new CfnOutput(this, STACK_OUTPUTS.tableName, { value: this.table.tableName });
    new CfnOutput(this, 'DeliveryQueueUrl', { value: deliveryQueue.queueUrl });
    new CfnOutput(this, 'DeliveryDeadLetterQueueUrl', { value: deliveryDeadLetters.queueUrl });
    for (const { plan, id: usagePlanId } of usagePlans) {
      new CfnOutput(this, STACK_OUTPUTS.usagePlanId(plan), { value: usagePlanId, description: `Usage plan '${plan}'` });
    }
  }

  /**
   * Unhandled errors (a crash, a timeout: the handlers answer every error they expect) of a group of
   * functions, at most METRICS_PER_ALARM to an alarm: `<group>-errors`, then `-errors-2`, ...
   */
  private addErrorAlarms(group: string, functions: { name: string; fn: lambda.IFunction }[], resourceName: (suffix: string) => string) {
    for (let start = 0; start < functions.length; start += METRICS_PER_ALARM) {
      const chunk = functions.slice(start, start + METRICS_PER_ALARM);
      const part = start === 0 ? '' : `-${start / METRICS_PER_ALARM + 1}`;
      const usingMetrics = Object.fromEntries(chunk.map(({ fn }, index) => [`m${index}`, fn.metricErrors({ period: Duration.minutes(5) })]));
      new cloudwatch.Alarm(this, `${group}Errors${part}`, {
        alarmName: resourceName(`${group}-errors${part}`),
        alarmDescription: `Unhandled errors in ${chunk.map(({ name }) => name).join(', ')}: their log groups say which and why`,
        metric: new cloudwatch.MathExpression({ expression: `SUM([${Object.keys(usingMetrics).join(',')}])`, usingMetrics, label: 'Errors', period: Duration.minutes(5) }),
        threshold: 1,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    }
  }

  /**
   * The key operations' API Gateway API keys: createApiKey makes a key's under a usage plan (and
   * deletes it should the plan refuse it), revokeApiKey deletes it. The maker is given the plans'
   * names (not their ids: a plan depends on the API's stage, which depends on these functions) and
   * GetUsagePlans, CreateApiKey, CreateUsagePlanKey, DeleteApiKey; the revoker DeleteApiKey alone.
   * The rights are a policy of their own for the same reason: a function waits for its default
   * policy, and this one names the plans. Every API Gateway key is made tagged with the stage
   * (lib/keys/gateway-keys.ts), which takes the right to tag it on creation (PUT /tags), and only
   * keys tagged with the stage may be deleted: not another stage's, nor any other API Gateway key.
   */
  private letManageGatewayKeys(
    fn: lambda.Function,
    calls: NonNullable<Route['managesGatewayKeys']>,
    usagePlans: { plan: UsagePlanName; id: string; name: string }[],
    stageName: string,
  ) {
    const apiGatewayArn = (resourcePath: string) => `arn:${this.partition}:apigateway:${this.region}::${resourcePath}`;
    const stageTag = `aws:RequestTag/${STAGE_TAG}`;
    const deleting = new iam.PolicyStatement({
      actions: ['apigateway:DELETE'],
      resources: [apiGatewayArn('/apikeys/*')],
      conditions: { StringEquals: { [`aws:ResourceTag/${STAGE_TAG}`]: stageName } },
    });
    const making =
      calls === 'create'
        ? [
            new iam.PolicyStatement({ actions: ['apigateway:GET'], resources: [apiGatewayArn('/usageplans')] }),
            new iam.PolicyStatement({ actions: ['apigateway:POST'], resources: [apiGatewayArn('/apikeys')], conditions: { StringEquals: { [stageTag]: stageName } } }),
            new iam.PolicyStatement({ actions: ['apigateway:POST'], resources: usagePlans.map(({ id }) => apiGatewayArn(`/usageplans/${id}/keys`)) }),
            new iam.PolicyStatement({
              actions: ['apigateway:PUT'],
              resources: [apiGatewayArn('/tags/*')],
              conditions: {
                StringEquals: { [stageTag]: stageName },
                'ForAllValues:StringEquals': { 'aws:TagKeys': [STAGE_TAG] },
                // Only a resource not yet tagged with a stage: the key being made, never another stage's.
                Null: { [`aws:ResourceTag/${STAGE_TAG}`]: 'true' },
              },
            }),
          ]
        : [];
    if (calls === 'create') for (const { plan, name } of usagePlans) fn.addEnvironment(usagePlanNameVariable(plan), name);
    new iam.Policy(this, `${fn.node.id}GatewayKeys`, { roles: [fn.role!], statements: [...making, deleting] });
  }


  /**
   * One method per route, each with its own Lambda. A path's other methods answer 405 from a mock
   * integration (no Lambda, no authorizer), like the local gateway.
   */
  private addRoutes(routes: Route[], functionFor: (route: Route) => lambda.IFunction) {
    const byPath = new Map<string, Route[]>();
    for (const route of routes) byPath.set(route.path, [...(byPath.get(route.path) ?? []), route]);
    for (const [resourcePath, pathRoutes] of byPath) {
      const resource = this.api.root.resourceForPath(resourcePath);
      for (const route of pathRoutes) {
        // Invoked by the deployed stage only: API Gateway's test invocations would take a permission of their own.
        resource.addMethod(route.method, new apigateway.LambdaIntegration(functionFor(route), { allowTestInvoke: false }), {
          operationName: route.operationId,
        });
      }
      this.addMethodNotAllowed(resource, pathRoutes.map((route) => route.method));
    }
  }

  /**
   * `GET /openapi.json` and `GET /health`, without a key, from mock integrations: what they answer is
   * static, so no Lambda runs and nothing is read. (The local gateway's reference page at /docs is
   * not served here: Swagger UI's assets are larger than a mapping template may be.)
   */
  private addKeylessPaths() {
    this.addStaticJson(OPENAPI_DOCUMENT_PATH, openApiDocument());
    this.addStaticJson(HEALTH_CHECK.path, HEALTH_CHECK.body);
  }

  private addStaticJson(resourcePath: string, body: unknown) {
    const resource = this.api.root.resourceForPath(resourcePath);
    resource.addMethod(
      'GET',
      new apigateway.MockIntegration({
        requestTemplates: { 'application/json': '{"statusCode": 200}' },
        passthroughBehavior: apigateway.PassthroughBehavior.WHEN_NO_TEMPLATES,
        integrationResponses: [{ statusCode: '200', responseTemplates: { 'application/json': velocityLiteral(JSON.stringify(body)) } }],
      }),
      { authorizationType: apigateway.AuthorizationType.NONE, apiKeyRequired: false, methodResponses: [{ statusCode: '200' }] },
    );
    this.addMethodNotAllowed(resource, ['GET']);
  }

  /** A 405 in the error shape, with Allow, for every method of the resource but `allowed`: one ANY method, which API Gateway takes for any method without one of its own. */
  private addMethodNotAllowed(resource: apigateway.IResource, allowed: string[]) {
    const allowHeader = 'method.response.header.Allow';
    resource.addMethod(
      'ANY',
      new apigateway.MockIntegration({
        requestTemplates: { 'application/json': '{"statusCode": 405}' },
        passthroughBehavior: apigateway.PassthroughBehavior.WHEN_NO_TEMPLATES,
        integrationResponses: [
          {
            statusCode: '405',
            responseTemplates: { 'application/json': JSON.stringify(errorBody(405, methodNotAllowedMessage(allowed))) },
            responseParameters: { [allowHeader]: `'${allowed.join(', ')}'` },
          },
        ],
      }),
      {
        authorizationType: apigateway.AuthorizationType.NONE,
        apiKeyRequired: false,
        methodResponses: [{ statusCode: '405', responseParameters: { [allowHeader]: true } }],
      },
    );
  }
}

/**
 * A mapping template that renders `text` exactly: integration response templates are Velocity, where
 * `$` starts a reference and `#` a directive or comment, and the document is full of `$ref`s.
 */
export function velocityLiteral(text: string): string {
  return `#set($d = '$')#set($h = '#')${text.replace(/[$#]/g, (character) => (character === '$' ? '${d}' : '${h}'))}`;
}

/** The table's indexes as `tableDefinition` declares them: the embedded store creates the same. */
function globalSecondaryIndexes(): dynamodb.GlobalSecondaryIndexProps[] {
  const { AttributeDefinitions, GlobalSecondaryIndexes } = tableDefinition('');
  const attribute = (keySchema: ReadonlyArray<{ AttributeName: string; KeyType: string }>, keyType: 'HASH' | 'RANGE') => {
    const name = keySchema.find((key) => key.KeyType === keyType)!.AttributeName;
    return { name, type: ATTRIBUTE_TYPES[AttributeDefinitions.find((definition) => definition.AttributeName === name)!.AttributeType] };
  };
  return GlobalSecondaryIndexes.map((index) => ({
    indexName: index.IndexName,
    partitionKey: attribute(index.KeySchema, 'HASH'),
    sortKey: attribute(index.KeySchema, 'RANGE'),
    projectionType: dynamodb.ProjectionType[index.Projection.ProjectionType],
  }));
}
