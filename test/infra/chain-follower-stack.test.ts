import { CHAIN_LAG_METRIC, CHAIN_METRICS_NAMESPACE, CHAIN_QUARANTINE_METRIC, KNOWN_CHAINS } from '../../lib/config/chains';
import { stageSettings } from '../../lib/config/stages';
import { idOf, statementsOf, synth } from './stack-template';

describe.each(['dev', 'prod'])('chain followers in the %s stack', (stageName) => {
  const stage = stageSettings(stageName);
  const { template, resources } = synth(stageName);

  it.each(stage.followedChains)('follows chain %s every minute, with its RPC URL in a secret it may read', (chainId) => {
    const functionName = `webhooks-${stageName}-followChain${chainId}`;
    const functionId = idOf(resources, 'AWS::Lambda::Function', 'FunctionName', functionName);
    const secretId = idOf(resources, 'AWS::SecretsManager::Secret', 'Name', `webhooks-${stageName}-chain-${chainId}-rpc-url`);
    expect(resources[secretId]!.Properties.SecretString).toBe(KNOWN_CHAINS[chainId]!.publicRpcUrl);
    const variables = resources[functionId]!.Properties.Environment.Variables;
    expect(variables).toMatchObject({ CHAIN_ID: chainId, CHAIN_RPC_URL_SECRET_ARN: { Ref: secretId } });
    expect(variables.DELIVERY_QUEUE_URL).toBeDefined();
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      Targets: [{ Arn: { 'Fn::GetAtt': [functionId, 'Arn'] } }],
    });
    const secretReads = statementsOf(resources, functionName).filter((statement) => JSON.stringify(statement.Resource) === JSON.stringify({ Ref: secretId }));
    expect(secretReads.flatMap((statement) => [statement.Action].flat())).toContain('secretsmanager:GetSecretValue');
  });

  it.each(stage.followedChains)('alarms when chain %s lags by more than 50 blocks or stops reporting', (chainId) => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: CHAIN_METRICS_NAMESPACE,
      MetricName: CHAIN_LAG_METRIC,
      Dimensions: [
        { Name: 'chainId', Value: chainId },
        { Name: 'service', Value: 'chain-follower' },
      ],
      Threshold: 50,
      TreatMissingData: 'breaching',
    });
  });

  it.each(stage.followedChains)('alarms as soon as the follower of chain %s quarantines a block', (chainId) => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: `webhooks-${stageName}-chain-${chainId}-quarantine`,
      Namespace: CHAIN_METRICS_NAMESPACE,
      MetricName: CHAIN_QUARANTINE_METRIC,
      Dimensions: [
        { Name: 'chainId', Value: chainId },
        { Name: 'service', Value: 'chain-follower' },
      ],
      Statistic: 'Sum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    });
  });

  it.each(stage.followedChains)('has a function an operator invokes to list and retake the quarantined blocks of chain %s', (chainId) => {
    const functionName = `webhooks-${stageName}-quarantinedBlocks${chainId}`;
    const functionId = idOf(resources, 'AWS::Lambda::Function', 'FunctionName', functionName);
    const secretId = idOf(resources, 'AWS::SecretsManager::Secret', 'Name', `webhooks-${stageName}-chain-${chainId}-rpc-url`);
    expect(resources[functionId]!.Properties.Environment.Variables).toMatchObject({ CHAIN_ID: chainId, CHAIN_RPC_URL_SECRET_ARN: { Ref: secretId } });
    const actions = statementsOf(resources, functionName).flatMap((statement) => [statement.Action].flat());
    expect(actions).toEqual(expect.arrayContaining(['dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:DeleteItem', 'secretsmanager:GetSecretValue', 'sqs:SendMessage']));
  });
});
