import { Match } from 'aws-cdk-lib/assertions';
import { render } from 'velocityjs';
import { openApiDocument } from '../../lib/openapi/document';
import { stageSettings } from '../../lib/config/stages';
import { HEALTH_CHECK, routeList } from '../../lib/routes';
import { GSI1, GSI2, GSI3, tableDefinition } from '../../lib/store/table';
import { gatewayResponses } from '../../infra/gateway-responses';
import { FOLLOW_CHAIN, QUARANTINED_BLOCKS, RUN_BACKFILLS } from '../../infra/chain-followers';
import { DELIVERY_DISPATCH, DELIVERY_SWEEP, MAINTENANCE, WebhooksStack } from '../../infra/webhooks-stack';
import { actionsOf, idOf, ofType, statementsOf, synth, synthIn, tableGrant, withSortedActions, type Resources, type Statement } from './stack-template';

/** "METHOD /path" for every method whose integration is a Lambda (not the 405 mocks). */
function lambdaRoutes(resources: Resources): string[] {
  const pathOf = (resourceId: string): string => {
    const resource = resources[resourceId];
    if (!resource || resource.Type !== 'AWS::ApiGateway::Resource') return '';
    const parent = resource.Properties.ParentId;
    return `${parent.Ref ? pathOf(parent.Ref) : ''}/${resource.Properties.PathPart}`;
  };
  return ofType(resources, 'AWS::ApiGateway::Method')
    .filter(([, method]) => method.Properties.Integration?.Type === 'AWS_PROXY')
    .map(([, method]) => `${method.Properties.HttpMethod} ${pathOf(method.Properties.ResourceId.Ref)}`)
    .sort();
}

describe.each(['dev', 'prod'])('the %s stack', (stageName) => {
  const stage = stageSettings(stageName);
  const { template, resources } = synth(stageName);
  const resourceIdOf = (pathPart: string) => ofType(resources, 'AWS::ApiGateway::Resource').find(([, resource]) => resource.Properties.PathPart === pathPart)![0];
  const [documentResourceId, healthResourceId] = [resourceIdOf('openapi.json'), resourceIdOf(HEALTH_CHECK.path.slice(1))];
  const isDocumentMethod = (method: Resources[string]) =>
    method.Properties.ResourceId.Ref === documentResourceId && method.Properties.HttpMethod === 'GET';
  const isHealthMethod = (method: Resources[string]) => method.Properties.ResourceId.Ref === healthResourceId && method.Properties.HttpMethod === 'GET';

  it('has exactly the routes of the route list the local gateway serves, each with its own Lambda', () => {
    expect(lambdaRoutes(resources)).toEqual(routeList.map((route) => `${route.method} ${route.path}`).sort());
    const integrationTargets = ofType(resources, 'AWS::ApiGateway::Method')
      .filter(([, method]) => method.Properties.Integration?.Type === 'AWS_PROXY')
      .map(([, method]) => JSON.stringify(method.Properties.Integration.Uri));
    expect(new Set(integrationTargets).size).toBe(routeList.length);
  });

  it('requires an API key and the authorizer on every routed method', () => {
    const [authorizerId] = ofType(resources, 'AWS::ApiGateway::Authorizer').map(([id]) => id);
    for (const [, method] of ofType(resources, 'AWS::ApiGateway::Method')) {
      if (method.Properties.Integration?.Type !== 'AWS_PROXY') continue;
      expect(method.Properties).toMatchObject({
        ApiKeyRequired: true,
        AuthorizationType: 'CUSTOM',
        AuthorizerId: { Ref: authorizerId },
      });
    }
  });

  it('serves the API document at GET /openapi.json without a key, rendered by Velocity exactly as generated', () => {
    const [, method] = ofType(resources, 'AWS::ApiGateway::Method').find(([, candidate]) => isDocumentMethod(candidate))!;
    expect(method.Properties).toMatchObject({ AuthorizationType: 'NONE', ApiKeyRequired: false, Integration: { Type: 'MOCK' } });
    const template: string = method.Properties.Integration.IntegrationResponses[0].ResponseTemplates['application/json'];
    // API Gateway's limit for a mapping template.
    expect(Buffer.byteLength(template)).toBeLessThan(300 * 1024);
    // Variables named like the document's keywords: an unescaped `$ref` would render as theirs.
    expect(render(template, { ref: 'X', schema: 'X', input: { body: 'X' }, context: {} })).toBe(JSON.stringify(openApiDocument()));
  });

  it('answers GET /health without a key from a mock integration, {"status":"ok"}, and other methods there with a 405', () => {
    const methods = ofType(resources, 'AWS::ApiGateway::Method').filter(([, method]) => method.Properties.ResourceId.Ref === healthResourceId);
    const [, get] = methods.find(([, method]) => isHealthMethod(method))!;
    expect(get.Properties).toMatchObject({ AuthorizationType: 'NONE', ApiKeyRequired: false, Integration: { Type: 'MOCK' } });
    const template: string = get.Properties.Integration.IntegrationResponses[0].ResponseTemplates['application/json'];
    expect(JSON.parse(render(template, {}))).toEqual({ status: 'ok' });
    expect(get.Properties.Integration.IntegrationResponses[0].StatusCode).toBe('200');
    for (const [, other] of methods.filter(([, method]) => !isHealthMethod(method))) {
      expect(other.Properties).toMatchObject({ ApiKeyRequired: false, Integration: { Type: 'MOCK', IntegrationResponses: [{ StatusCode: '405' }] } });
    }
    expect(methods.length).toBeGreaterThan(1);
  });

  it('answers other methods on a routed path with a 405 mock in the error shape', () => {
    const mocks = ofType(resources, 'AWS::ApiGateway::Method').filter(
      ([, method]) => method.Properties.Integration?.Type === 'MOCK' && !isDocumentMethod(method) && !isHealthMethod(method),
    );
    expect(mocks.length).toBeGreaterThan(0);
    for (const [, mock] of mocks) {
      const response = mock.Properties.Integration.IntegrationResponses[0];
      expect(response.StatusCode).toBe('405');
      expect(JSON.parse(response.ResponseTemplates['application/json'])).toEqual({
        message: expect.stringMatching(/^This path allows only /),
        statusCode: 405,
        error: 'Method Not Allowed',
      });
      expect(response.ResponseParameters['method.response.header.Allow']).toMatch(/^'[A-Z, ]+'$/);
    }
  });

  it('takes API keys from the REQUEST authorizer reading x-service-api-key, with a result cache', () => {
    template.hasResourceProperties('AWS::ApiGateway::RestApi', { ApiKeySourceType: 'AUTHORIZER' });
    template.hasResourceProperties('AWS::ApiGateway::Authorizer', {
      Type: 'REQUEST',
      IdentitySource: 'method.request.header.x-service-api-key',
      AuthorizerResultTtlInSeconds: stage.authorizerCacheTtlSeconds,
    });
  });

  it('has a usage plan per configured plan with its throttle and quota, on the stage', () => {
    const plans = ofType(resources, 'AWS::ApiGateway::UsagePlan').map(([, plan]) => plan.Properties);
    expect(plans).toHaveLength(Object.keys(stage.usagePlans).length);
    for (const [name, settings] of Object.entries(stage.usagePlans)) {
      const plan = plans.find((candidate) => candidate.UsagePlanName === `webhooks-${stageName}-${name}`);
      expect(plan).toMatchObject({
        Throttle: { RateLimit: settings.rateLimit, BurstLimit: settings.burstLimit },
        ApiStages: [expect.objectContaining({ Stage: expect.anything() })],
      });
      if (settings.quota) expect(plan?.Quota).toEqual({ Limit: settings.quota.limit, Period: settings.quota.period });
      else expect(plan?.Quota).toBeUndefined();
    }
  });

  it('answers every gateway-produced error in the error shape with application/json', () => {
    const responses = ofType(resources, 'AWS::ApiGateway::GatewayResponse').map(([, response]) => response.Properties);
    const required = ['DEFAULT_4XX', 'DEFAULT_5XX', 'UNAUTHORIZED', 'ACCESS_DENIED', 'THROTTLED', 'QUOTA_EXCEEDED',
      'BAD_REQUEST_BODY', 'REQUEST_TOO_LARGE', 'INTEGRATION_TIMEOUT', 'MISSING_AUTHENTICATION_TOKEN'];
    expect(responses.map((response) => response.ResponseType)).toEqual(expect.arrayContaining(required));
    for (const response of responses) {
      const definition = gatewayResponses.find((candidate) => candidate.type === response.ResponseType)!;
      expect(response.StatusCode).toBe(String(definition.statusCode));
      expect(response.ResponseParameters['gatewayresponse.header.Content-Type']).toBe("'application/json'");
      const body = response.ResponseTemplates['application/json'].replace('$context.error.messageString', '"from API Gateway"');
      expect(JSON.parse(body)).toEqual({ message: expect.any(String), statusCode: definition.statusCode, error: expect.any(String) });
    }
    const byType = Object.fromEntries(responses.map((response) => [response.ResponseType, response]));
    expect(byType.MISSING_AUTHENTICATION_TOKEN.StatusCode).toBe('404');
    expect(JSON.parse(byType.MISSING_AUTHENTICATION_TOKEN.ResponseTemplates['application/json']).error).toBe('Not Found');
    expect(byType.THROTTLED.StatusCode).toBe('429');
    expect(byType.THROTTLED.ResponseParameters['gatewayresponse.header.Retry-After']).toBe("'1'");
    expect(byType.REQUEST_TOO_LARGE.StatusCode).toBe('413');
  });

  it('has the one table with its keys, gsi1, gsi2, gsi3, on-demand billing, PITR and KMS encryption', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      BillingMode: 'PAY_PER_REQUEST',
      GlobalSecondaryIndexes: [
        {
          IndexName: GSI1.indexName,
          KeySchema: [
            { AttributeName: GSI1.partitionKey, KeyType: 'HASH' },
            { AttributeName: GSI1.sortKey, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        },
        {
          IndexName: GSI2.indexName,
          KeySchema: [
            { AttributeName: GSI2.partitionKey, KeyType: 'HASH' },
            { AttributeName: GSI2.sortKey, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'KEYS_ONLY' },
        },
        {
          IndexName: GSI3.indexName,
          KeySchema: [
            { AttributeName: GSI3.partitionKey, KeyType: 'HASH' },
            { AttributeName: GSI3.sortKey, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'KEYS_ONLY' },
        },
      ],
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      // SSEEnabled with no key of our own: the AWS-managed KMS key (aws/dynamodb).
      SSESpecification: { SSEEnabled: true, KMSMasterKeyId: Match.absent() },
    });
  });

  it('declares the same indexes and attribute types as tableDefinition, which the embedded store creates', () => {
    const definition = tableDefinition('webhooks');
    const [[, table]] = ofType(resources, 'AWS::DynamoDB::Table') as [[string, Resources[string]]];
    expect(table.Properties.GlobalSecondaryIndexes).toEqual(definition.GlobalSecondaryIndexes);
    const byName = (a: { AttributeName: string }, b: { AttributeName: string }) => a.AttributeName.localeCompare(b.AttributeName);
    expect([...table.Properties.AttributeDefinitions].sort(byName)).toEqual([...definition.AttributeDefinitions].sort(byName));
  });

  it('lets DynamoDB delete finished messages at their expiresAt (TTL)', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', { TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true } });
  });

  it(stage.production ? 'retains the table and protects it from deletion' : 'lets the table go with the stack', () => {
    const [[, table]] = ofType(resources, 'AWS::DynamoDB::Table') as [[string, Resources[string]]];
    expect(table.DeletionPolicy).toBe(stage.production ? 'Retain' : 'Delete');
    expect(table.Properties.DeletionProtectionEnabled ?? false).toBe(stage.production);
  });

  it('runs every Lambda on nodejs24.x, arm64, with the stage memory and timeout, tracing and log retention', () => {
    const functions = ofType(resources, 'AWS::Lambda::Function').map(([, fn]) => fn.Properties);
    // The background functions have their own timeouts; the dispatcher's is checked with its queue.
    const ownTimeouts: Record<string, number | undefined> = {
      maintainAddresses: stage.maintenanceTimeoutSeconds,
      sweepDeliveries: DELIVERY_SWEEP.timeoutSeconds,
      dispatchDeliveries: undefined,
      ...Object.fromEntries(stage.followedChains.map((chainId) => [`followChain${chainId}`, FOLLOW_CHAIN.timeoutSeconds])),
      ...Object.fromEntries(stage.followedChains.map((chainId) => [`quarantinedBlocks${chainId}`, QUARANTINED_BLOCKS.timeoutSeconds])),
      ...Object.fromEntries(stage.followedChains.map((chainId) => [`runBackfills${chainId}`, RUN_BACKFILLS.timeoutSeconds])),
    };
    const names = functions.filter((fn) => fn.Runtime === 'nodejs24.x').map((fn) => fn.FunctionName);
    expect(names.sort()).toEqual(
      [...routeList.map((route) => route.operationId), 'authorizer', ...Object.keys(ownTimeouts)].map((name) => `webhooks-${stageName}-${name}`).sort(),
    );
    for (const fn of functions.filter((candidate) => candidate.Runtime === 'nodejs24.x')) {
      const name = fn.FunctionName.slice(`webhooks-${stageName}-`.length);
      expect(fn).toMatchObject({
        Architectures: ['arm64'],
        MemorySize: stage.lambdaMemoryMb,
        Timeout: name in ownTimeouts ? (ownTimeouts[name] ?? expect.any(Number)) : stage.lambdaTimeoutSeconds,
        TracingConfig: { Mode: 'Active' },
        Environment: { Variables: expect.objectContaining({ STAGE: stageName, TABLE_NAME: expect.anything(), NODE_OPTIONS: '--enable-source-maps' }) },
      });
    }
    template.allResourcesProperties('AWS::Logs::LogGroup', { RetentionInDays: stage.logRetentionDays });
  });

  it('grants each function only the table actions its operation uses, never a wildcard', () => {
    // The console's upload (CDK's BucketDeployment) is granted S3 on its buckets alone: console-hosting.test.ts checks it.
    const statements: Statement[] = ofType(resources, 'AWS::IAM::Policy')
      .filter(([id]) => !id.startsWith('CustomCDKBucketDeployment'))
      .flatMap(([, policy]) => policy.Properties.PolicyDocument.Statement);
    const tableStatements = statements.filter((statement) => actionsOf(statement).some((action) => action.startsWith('dynamodb:')));
    for (const statement of statements) {
      for (const action of actionsOf(statement)) expect(action).not.toMatch(/\*/);
    }
    // Only X-Ray's, which takes no narrower resource, is on every resource (infra/nag-acknowledgements.ts says so).
    const onEverything = statements.filter((statement) => [statement.Resource].flat().includes('*'));
    expect(onEverything.flatMap(actionsOf).filter((action) => !action.startsWith('xray:'))).toEqual([]);
    const granted = tableStatements.map((statement) => actionsOf(statement).sort().join(',')).sort();
    // A chain's three functions share a role: one grant of their specs, which are the same.
    expect(new Set([FOLLOW_CHAIN, QUARANTINED_BLOCKS, RUN_BACKFILLS].map(({ tableActions, queriedIndexes }) => JSON.stringify({ tableActions, queriedIndexes }))).size).toBe(1);
    const specs = [...routeList, MAINTENANCE, DELIVERY_DISPATCH, DELIVERY_SWEEP, ...stage.followedChains.map(() => FOLLOW_CHAIN)];
    const expected = [
      ...specs.flatMap((spec: { tableActions: readonly string[]; queriedIndexes?: readonly string[] }) => [
        ...(spec.tableActions.length > 0 ? [[...spec.tableActions].sort().join(',')] : []),
        ...(spec.queriedIndexes?.length ? ['dynamodb:Query'] : []),
      ]),
      // The authorizer's: the key's item and those of the keys it descends from, and its lastUsedAt, under conditions.
      'dynamodb:BatchGetItem,dynamodb:GetItem',
      'dynamodb:UpdateItem',
    ].sort();
    expect(granted).toEqual(expected);
  });

  it.each(routeList)("grants $operationId's Lambda exactly its route's table actions on the table, and Query on the indexes it queries", (route) => {
    const tableStatements = statementsOf(resources, `webhooks-${stageName}-${route.operationId}`).filter((statement) =>
      actionsOf(statement).some((action) => action.startsWith('dynamodb:')),
    );
    expect(tableStatements.map(withSortedActions)).toEqual(tableGrant(resources, route));
  });

  const usagePlanRef = (plan: string) => ({ Ref: idOf(resources, 'AWS::ApiGateway::UsagePlan', 'UsagePlanName', `webhooks-${stageName}-${plan}`) });
  const apiGatewayArn = (...path: unknown[]) => ({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':apigateway:', { Ref: 'AWS::Region' }, ...path]] });
  const apiGatewayStatements = (functionName: string) =>
    statementsOf(resources, functionName).filter((statement) => actionsOf(statement).some((action) => action.startsWith('apigateway:')));

  it("lets revokeApiKey's Lambda delete the stage's API Gateway keys, and nothing else in API Gateway", () => {
    expect(apiGatewayStatements(`webhooks-${stageName}-revokeApiKey`)).toEqual([
      { Effect: 'Allow', Action: 'apigateway:DELETE', Resource: apiGatewayArn('::/apikeys/*'), Condition: { StringEquals: { 'aws:ResourceTag/stage': stageName } } },
    ]);
  });

  it.each(routeList.filter((route) => route.managesGatewayKeys === 'create'))(
    "lets $operationId's Lambda find the stage's usage plans, create API keys under them and delete them, and nothing else in API Gateway",
    (route) => {
      expect(apiGatewayStatements(`webhooks-${stageName}-${route.operationId}`)).toEqual([
        { Effect: 'Allow', Action: 'apigateway:GET', Resource: apiGatewayArn('::/usageplans') },
        { Effect: 'Allow', Action: 'apigateway:POST', Resource: apiGatewayArn('::/apikeys'), Condition: { StringEquals: { 'aws:RequestTag/stage': stageName } } },
        {
          Effect: 'Allow',
          Action: 'apigateway:POST',
          Resource: Object.keys(stage.usagePlans).map((plan) => apiGatewayArn('::/usageplans/', usagePlanRef(plan), '/keys')),
        },
        {
          Effect: 'Allow',
          Action: 'apigateway:PUT',
          Resource: apiGatewayArn('::/tags/*'),
          Condition: {
            StringEquals: { 'aws:RequestTag/stage': stageName },
            'ForAllValues:StringEquals': { 'aws:TagKeys': ['stage'] },
            Null: { 'aws:ResourceTag/stage': 'true' },
          },
        },
        // Only API Gateway keys tagged with this stage: not another stage's.
        { Effect: 'Allow', Action: 'apigateway:DELETE', Resource: apiGatewayArn('::/apikeys/*'), Condition: { StringEquals: { 'aws:ResourceTag/stage': stageName } } },
      ]);
    },
  );

  it("lets the authorizer read only API key items, and write only their lastUsedAt, returning nothing else", () => {
    const statements = statementsOf(resources, `webhooks-${stageName}-authorizer`).filter((statement) => actionsOf(statement).some((action) => action.startsWith('dynamodb:')));
    expect(statements).toEqual([
      { Effect: 'Allow', Action: ['dynamodb:GetItem', 'dynamodb:BatchGetItem'], Resource: expect.anything(), Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['APIKEY#*'] } } },
      {
        Effect: 'Allow',
        Action: 'dynamodb:UpdateItem',
        Resource: expect.anything(),
        Condition: {
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['APIKEY#*'] },
          'ForAllValues:StringEquals': { 'dynamodb:Attributes': ['pk', 'sk', 'lastUsedAt'] },
          StringEqualsIfExists: { 'dynamodb:ReturnValues': ['NONE', 'UPDATED_OLD', 'UPDATED_NEW'] },
        },
      },
    ]);
  });

  it("names the usage plans to the functions that make API Gateway keys, and gives API Gateway rights to no other", () => {
    const managing = new Set(routeList.filter((route) => route.managesGatewayKeys === 'create').map((route) => `webhooks-${stageName}-${route.operationId}`));
    const revoking = routeList.filter((route) => route.managesGatewayKeys === 'delete').map((route) => `webhooks-${stageName}-${route.operationId}`);
    expect(managing.size).toBeGreaterThan(0);
    for (const [, fn] of ofType(resources, 'AWS::Lambda::Function')) {
      const name: string = fn.Properties.FunctionName;
      if (typeof name !== 'string' || !name.startsWith(`webhooks-${stageName}-`)) continue;
      const variables = fn.Properties.Environment?.Variables ?? {};
      if (managing.has(name)) {
        expect(variables).toMatchObject({ USAGE_PLAN_NAME_STANDARD: `webhooks-${stageName}-standard`, USAGE_PLAN_NAME_UNLIMITED: `webhooks-${stageName}-unlimited` });
      } else {
        expect(Object.keys(variables).filter((variable) => variable.startsWith('USAGE_PLAN_'))).toEqual([]);
        if (!revoking.includes(name)) expect(apiGatewayStatements(name)).toEqual([]);
      }
    }
  });

  it.each(['maintainAddresses', 'sweepDeliveries'])('runs the scheduled function %s once a minute', (name) => {
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [Match.objectLike({ Arn: Match.objectLike({ 'Fn::GetAtt': [Match.stringLikeRegexp(`^${name}Function`), 'Arn'] }) })],
    });
  });

  it('gives the page-token secret only to the operations that sign page tokens', () => {
    const functions = ofType(resources, 'AWS::Lambda::Function').map(([, fn]) => fn.Properties);
    const withSecret = functions.filter((fn) => fn.Environment?.Variables?.PAGE_TOKEN_SECRET_ARN);
    expect(withSecret).toHaveLength(routeList.filter((route) => route.usesPageTokens).length);
    template.hasResourceProperties('AWS::SecretsManager::Secret', {
      GenerateSecretString: Match.objectLike({ PasswordLength: 64, ExcludeUppercase: true, ExcludePunctuation: true }),
    });
  });

  it('outputs the API URL, the table, the usage plan ids and the delivery queues', () => {
    const outputs = Object.keys(template.toJSON().Outputs);
    expect(outputs).toEqual(
      expect.arrayContaining(['ApiUrl', 'TableName', 'UsagePlanIdStandard', 'UsagePlanIdUnlimited', 'DeliveryQueueUrl', 'DeliveryDeadLetterQueueUrl']),
    );
  });

  it('serves the console and, on its origin, the API\'s /v1/*, /health and /openapi.json from one distribution, and outputs its URL', () => {
    const [[distributionId, distribution]] = ofType(resources, 'AWS::CloudFront::Distribution') as [[string, Resources[string]]];
    const config = distribution.Properties.DistributionConfig;
    const apiOrigin = config.Origins.find((origin: { CustomOriginConfig?: unknown }) => origin.CustomOriginConfig);
    const [apiId] = ofType(resources, 'AWS::ApiGateway::RestApi').map(([id]) => id);
    expect(JSON.stringify(apiOrigin.DomainName)).toContain(`"Ref":"${apiId}"`);
    expect(JSON.stringify(apiOrigin.OriginPath)).toContain('ApiDeploymentStage');
    expect(config.CacheBehaviors.map((behavior: { PathPattern: string; TargetOriginId: string }) => [behavior.PathPattern, behavior.TargetOriginId])).toEqual(
      ['/v1/*', HEALTH_CHECK.path, '/openapi.json'].map((pattern) => [pattern, apiOrigin.Id]),
    );
    expect(template.toJSON().Outputs.ConsoleUrl.Value).toEqual({ 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [distributionId, 'DomainName'] }, '/console/']] });
  });

  it('names its resources after the stage so that stages deploy side by side', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', { TableName: `webhooks-${stageName}-table` });
    template.hasResourceProperties('AWS::ApiGateway::RestApi', { Name: `webhooks-${stageName}-api` });
    template.hasResourceProperties('AWS::ApiGateway::Stage', { StageName: stageName, TracingEnabled: true });
  });

  it("names CloudFront's resources, global to the account, after the stage and the region, so that a stage deploys to two regions", () => {
    const named = [
      ['AWS::CloudFront::ResponseHeadersPolicy', 'ResponseHeadersPolicyConfig'],
      ['AWS::CloudFront::OriginRequestPolicy', 'OriginRequestPolicyConfig'],
      ['AWS::CloudFront::OriginAccessControl', 'OriginAccessControlConfig'],
    ] as const;
    for (const [type, config] of named) {
      const names = ofType(resources, type).map(([, resource]) => JSON.stringify(resource.Properties[config].Name));
      expect(names).toHaveLength(1);
      expect(names[0]).toContain(`webhooks-${stageName}-`);
      expect(names[0]).toContain('{"Ref":"AWS::Region"}');
    }
  });

  it('sends every alarm, raised and cleared, to the stage topic, which it outputs', () => {
    const [[topicId, topic]] = ofType(resources, 'AWS::SNS::Topic') as [[string, Resources[string]]];
    expect(topic.Properties.TopicName).toBe(`webhooks-${stageName}-alarms`);
    const alarms = ofType(resources, 'AWS::CloudWatch::Alarm');
    expect(alarms.length).toBeGreaterThan(10);
    for (const [, alarm] of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([{ Ref: topicId }]);
      expect(alarm.Properties.OKActions).toEqual([{ Ref: topicId }]);
    }
    expect(template.toJSON().Outputs.AlarmTopicArn.Value).toEqual({ Ref: topicId });
    expect(ofType(resources, 'AWS::SNS::Subscription')).toEqual([]);
  });

  it("raises an alarm on any function's unhandled errors: each function in one alarm, ten at most to an alarm, a chain's three together", () => {
    const functionIds = ofType(resources, 'AWS::Lambda::Function')
      .filter(([, fn]) => String(fn.Properties.FunctionName).startsWith(`webhooks-${stageName}-`))
      .map(([id]) => id);
    const watched = ofType(resources, 'AWS::CloudWatch::Alarm').flatMap(([, alarm]) => {
      const metrics = (alarm.Properties.Metrics ?? []).filter((query: { MetricStat?: unknown }) => query.MetricStat);
      if (metrics.length === 0 || metrics[0].MetricStat.Metric.MetricName !== 'Errors') return [];
      expect(metrics.length).toBeLessThanOrEqual(10);
      expect(alarm.Properties).toMatchObject({ Threshold: 1, TreatMissingData: 'notBreaching' });
      return metrics.map((query: { MetricStat: { Metric: { Dimensions: { Value: { Ref: string } }[] } } }) => query.MetricStat.Metric.Dimensions[0]!.Value.Ref);
    });
    expect(watched.sort()).toEqual(functionIds.sort());
    for (const chainId of stage.followedChains) {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', { AlarmName: `webhooks-${stageName}-chain-${chainId}-errors`, AlarmDescription: Match.stringLikeRegexp(`followChain${chainId}, quarantinedBlocks${chainId}, runBackfills${chainId}`) });
    }
  });

  it('runs the scheduled functions once a minute, never retried by the rule or as asynchronous invocations', () => {
    const rules = ofType(resources, 'AWS::Events::Rule');
    expect(rules.length).toBe(2 + 2 * stage.followedChains.length);
    const invokeConfigs = ofType(resources, 'AWS::Lambda::EventInvokeConfig').map(([, config]) => config.Properties);
    for (const [, rule] of rules) {
      expect(rule.Properties.ScheduleExpression).toBe('rate(1 minute)');
      const [target] = rule.Properties.Targets;
      expect(target.RetryPolicy).toEqual({ MaximumRetryAttempts: 0 });
      const functionId = target.Arn['Fn::GetAtt'][0];
      expect(invokeConfigs).toContainEqual(expect.objectContaining({ FunctionName: { Ref: functionId }, MaximumRetryAttempts: 0 }));
    }
  });
});

test("subscribes -c alarmEmail's address to the stage's alarms", () => {
  const { resources } = synthIn((app) => new WebhooksStack(app, 'webhooks-dev', { stage: stageSettings('dev'), alarmEmail: 'ops@example.com' }));
  const [topicId] = ofType(resources, 'AWS::SNS::Topic')[0]!;
  expect(ofType(resources, 'AWS::SNS::Subscription').map(([, subscription]) => subscription.Properties)).toEqual([
    { Protocol: 'email', Endpoint: 'ops@example.com', TopicArn: { Ref: topicId } },
  ]);
});
