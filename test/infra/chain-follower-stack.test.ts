import { RUN_BACKFILLS } from '../../infra/chain-followers';
import {
  CHAIN_LAG_METRIC,
  CHAIN_METRICS_NAMESPACE,
  CHAIN_QUARANTINE_METRIC,
  CHAIN_STALLED_METRIC,
  CHAIN_TRACES_OMITTED_METRIC,
  KNOWN_CHAINS,
} from '../../lib/config/chains';
import { stageSettings } from '../../lib/config/stages';
import { actionsOf, idOf, statementsOf, synth, tableGrant, withSortedActions } from './stack-template';

describe.each(['dev', 'prod'])('chain followers in the %s stack', (stageName) => {
  const stage = stageSettings(stageName);
  const { template, resources } = synth(stageName);
  const secretIdOf = (chainId: string) => idOf(resources, 'AWS::SecretsManager::Secret', 'Name', `webhooks-${stageName}-chain-${chainId}-rpc-url`);
  const functionIdOf = (name: string) => idOf(resources, 'AWS::Lambda::Function', 'FunctionName', `webhooks-${stageName}-${name}`);

  it.each(stage.followedChains)('follows chain %s every minute, with its RPC URL in a secret it may read', (chainId) => {
    const functionId = functionIdOf(`followChain${chainId}`);
    const secretId = secretIdOf(chainId);
    expect(resources[secretId]!.Properties.SecretString).toBe(KNOWN_CHAINS[chainId]!.publicRpcUrl);
    const variables = resources[functionId]!.Properties.Environment.Variables;
    expect(variables).toMatchObject({ CHAIN_ID: chainId, CHAIN_RPC_URL_SECRET_ARN: { Ref: secretId } });
    expect(variables.DELIVERY_QUEUE_URL).toBeDefined();
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      Targets: [{ Arn: { 'Fn::GetAtt': [functionId, 'Arn'] } }],
    });
  });

  it.each(stage.followedChains.flatMap((chainId) => ['followChain', 'quarantinedBlocks', 'runBackfills'].map((name) => `${name}${chainId}`)))(
    "%s reads its chain's RPC URL secret with GetSecretValue alone, and no other secret",
    (name) => {
      const chainId = name.replace(/^\D+/, '');
      const secretReads = statementsOf(resources, `webhooks-${stageName}-${name}`).filter((statement) => actionsOf(statement).some((action) => action.startsWith('secretsmanager:')));
      expect(secretReads).toEqual([{ Effect: 'Allow', Action: 'secretsmanager:GetSecretValue', Resource: { Ref: secretIdOf(chainId) } }]);
    },
  );

  it.each(stage.followedChains)("runs chain %s's backfills every minute for at most a minute, with its RPC URL secret, the table and the delivery queue", (chainId) => {
    const functionId = functionIdOf(`runBackfills${chainId}`);
    expect(resources[functionId]!.Properties).toMatchObject({
      Timeout: 60,
      Environment: {
        Variables: {
          CHAIN_ID: chainId,
          CHAIN_RPC_URL_SECRET_ARN: { Ref: secretIdOf(chainId) },
          DELIVERY_QUEUE_URL: { Ref: idOf(resources, 'AWS::SQS::Queue', 'QueueName', `webhooks-${stageName}-deliveries`) },
          TABLE_NAME: { Ref: idOf(resources, 'AWS::DynamoDB::Table', 'TableName', `webhooks-${stageName}-table`) },
        },
      },
    });
    const ruleId = idOf(resources, 'AWS::Events::Rule', 'Name', `webhooks-${stageName}-run-backfills-${chainId}`);
    expect(resources[ruleId]!.Properties).toMatchObject({
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [{ Arn: { 'Fn::GetAtt': [functionId, 'Arn'] } }],
    });
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      FunctionName: { 'Fn::GetAtt': [functionId, 'Arn'] },
      Principal: 'events.amazonaws.com',
      SourceArn: { 'Fn::GetAtt': [ruleId, 'Arn'] },
    });
  });

  it.each(stage.followedChains)("grants chain %s's three functions one role with only what they send: their table actions on the table and the indexes they query, SendMessage to the delivery queue, their chain's secret", (chainId) => {
    const names = ['followChain', 'quarantinedBlocks', 'runBackfills'].map((kind) => `webhooks-${stageName}-${kind}${chainId}`);
    const roles = new Set(names.map((name) => JSON.stringify(resources[idOf(resources, 'AWS::Lambda::Function', 'FunctionName', name)]!.Properties.Role)));
    expect(roles.size).toBe(1);
    const [roleId] = JSON.parse([...roles][0]!)['Fn::GetAtt'];
    expect(resources[roleId]!.Properties.ManagedPolicyArns).toBeUndefined();
    for (const name of names) {
      expect(statementsOf(resources, name).map(withSortedActions)).toEqual([
        // Its chain's log group alone, not the managed basic execution role's every log group.
        { Effect: 'Allow', Action: ['logs:CreateLogStream', 'logs:PutLogEvents'], Resource: { 'Fn::GetAtt': [idOf(resources, 'AWS::Logs::LogGroup', 'LogGroupName', `/aws/lambda/webhooks-${stageName}-chain-${chainId}`), 'Arn'] } },
        // Tracing's, which X-Ray grants on no narrower resource.
        { Effect: 'Allow', Action: ['xray:PutTelemetryRecords', 'xray:PutTraceSegments'], Resource: '*' },
        ...tableGrant(resources, RUN_BACKFILLS),
        { Effect: 'Allow', Action: ['sqs:SendMessage'], Resource: { 'Fn::GetAtt': [idOf(resources, 'AWS::SQS::Queue', 'QueueName', `webhooks-${stageName}-deliveries`), 'Arn'] } },
        { Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: { Ref: secretIdOf(chainId) } },
      ]);
    }
  });

  it('has room for 10 followed chains: each adds 18 resources, and the stack stays well under CloudFormation\'s 500', () => {
    const count = (followedChains: string[]) => Object.keys(synth(stageName, { followedChains }).resources).length;
    const [one, two] = [count(['43114']), count(['43114', '43113'])];
    expect(two - one).toBe(18);
    expect(one + 9 * (two - one)).toBeLessThanOrEqual(460);
  });

  const alarms = [
    { alarm: 'lag', when: 'lags by more than 50 blocks, or stops reporting', MetricName: CHAIN_LAG_METRIC, Statistic: 'Minimum', Threshold: 50, ComparisonOperator: 'GreaterThanThreshold', TreatMissingData: 'breaching' },
    { alarm: 'quarantine', when: 'quarantines a block', MetricName: CHAIN_QUARANTINE_METRIC, Statistic: 'Sum', Threshold: 0, ComparisonOperator: 'GreaterThanThreshold', TreatMissingData: 'notBreaching' },
    // Not when it stops reporting: the lag alarm does.
    { alarm: 'stalled', when: 'has been stalled for two minutes', MetricName: CHAIN_STALLED_METRIC, Statistic: 'Maximum', Threshold: 120, ComparisonOperator: 'GreaterThanOrEqualToThreshold', TreatMissingData: 'notBreaching' },
    {
      alarm: 'traces-omitted',
      when: 'notifies a transaction without the internal transactions it could not trace',
      MetricName: CHAIN_TRACES_OMITTED_METRIC,
      Statistic: 'Sum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    },
  ];
  it.each(stage.followedChains.flatMap((chainId) => alarms.map((alarm) => ({ chainId, ...alarm }))))('alarms when the follower of chain $chainId $when', ({ chainId, alarm, when: _when, ...properties }) => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: `webhooks-${stageName}-chain-${chainId}-${alarm}`,
      Namespace: CHAIN_METRICS_NAMESPACE,
      Dimensions: [
        { Name: 'chainId', Value: chainId },
        { Name: 'service', Value: 'chain-follower' },
      ],
      ...properties,
    });
  });

  it.each(stage.followedChains)('has a function an operator invokes to list and retake the quarantined blocks of chain %s', (chainId) => {
    const functionId = functionIdOf(`quarantinedBlocks${chainId}`);
    expect(resources[functionId]!.Properties.Environment.Variables).toMatchObject({ CHAIN_ID: chainId, CHAIN_RPC_URL_SECRET_ARN: { Ref: secretIdOf(chainId) } });
    const actions = statementsOf(resources, `webhooks-${stageName}-quarantinedBlocks${chainId}`).flatMap((statement) => [statement.Action].flat());
    expect(actions).toEqual(expect.arrayContaining(['dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:DeleteItem', 'secretsmanager:GetSecretValue', 'sqs:SendMessage']));
  });
});
