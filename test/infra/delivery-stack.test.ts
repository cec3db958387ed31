import { stageSettings } from '../../lib/config/stages';
import { routeList, routes } from '../../lib/routes';
import { GSI2, GSI3 } from '../../lib/store/table';
import { DELIVERY_DISPATCH, DELIVERY_SWEEP } from '../../infra/webhooks-stack';
import { actionsOf, idOf, indexArnOf, ofType, statementsOf, synth, tableArnOf, type Statement } from './stack-template';

describe.each(['dev', 'prod'])('delivery in the %s stack', (stageName) => {
  const stage = stageSettings(stageName);
  const { template, resources } = synth(stageName);
  const functionName = (name: string) => `webhooks-${stageName}-${name}`;
  const queueId = idOf(resources, 'AWS::SQS::Queue', 'QueueName', `webhooks-${stageName}-deliveries`);
  const deadLetterQueueId = idOf(resources, 'AWS::SQS::Queue', 'QueueName', `webhooks-${stageName}-deliveries-dlq`);
  const queueArn = { 'Fn::GetAtt': [queueId, 'Arn'] };
  const dispatcherId = idOf(resources, 'AWS::Lambda::Function', 'FunctionName', functionName('dispatchDeliveries'));
  const tableArn = tableArnOf(resources);
  const indexArn = (indexName: string) => indexArnOf(resources, indexName);
  /** The DynamoDB statements, their actions in order, so that they compare whatever order the stack lists them in. */
  const tableStatements = (statements: Statement[]) =>
    statements
      .filter((statement) => actionsOf(statement).some((action) => action.startsWith('dynamodb:')))
      .map((statement) => ({ ...statement, Action: Array.isArray(statement.Action) ? [...statement.Action].sort() : statement.Action }));
  const sendStatements = (statements: Statement[]) => statements.filter((statement) => actionsOf(statement).includes('sqs:SendMessage'));
  const queueUrlOf = (name: string) =>
    ofType(resources, 'AWS::Lambda::Function').find(([, fn]) => fn.Properties.FunctionName === functionName(name))![1].Properties.Environment.Variables
      .DELIVERY_QUEUE_URL;

  it('is a standard queue, which messages with a MessageGroupId make a fair one', () => {
    expect(resources[queueId]!.Properties.FifoQueue).toBeUndefined();
  });

  it('moves a queue message to the dead-letter queue after 5 receives, both encrypted with SQS-managed keys', () => {
    expect(resources[queueId]!.Properties).toMatchObject({
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [deadLetterQueueId, 'Arn'] }, maxReceiveCount: 5 },
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 4 * 86_400,
    });
    expect(resources[deadLetterQueueId]!.Properties).toMatchObject({ SqsManagedSseEnabled: true, MessageRetentionPeriod: 14 * 86_400 });
  });

  it('alarms as soon as the dead-letter queue holds a message', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [deadLetterQueueId, 'QueueName'] } }],
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
    });
  });

  it('alarms when the oldest queue message waits longer than the longest delay and 5 minutes', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateAgeOfOldestMessage',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId, 'QueueName'] } }],
      Threshold: 900 + 300,
    });
  });

  it('feeds the dispatcher batches of 10 from the queue, taking back only the failed messages of a batch', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: queueArn,
      FunctionName: { Ref: dispatcherId },
      BatchSize: DELIVERY_DISPATCH.batchSize,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      MaximumBatchingWindowInSeconds: 1,
      ScalingConfig: { MaximumConcurrency: Math.ceil(stage.delivery.concurrency.total / DELIVERY_DISPATCH.batchSize) + stage.delivery.concurrency.perAccount },
    });
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
  });

  it("gives the dispatcher more than one attempt's time, and its queue six times the dispatcher's as visibility timeout", () => {
    const timeout: number = resources[dispatcherId]!.Properties.Timeout;
    expect(timeout).toBeGreaterThanOrEqual(stage.delivery.attemptTimeoutSeconds + 10);
    expect(resources[queueId]!.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(6 * timeout);
  });

  it("grants the dispatcher what its messages, slot leases and endpoints' health need on the table, and SendMessage on the delivery queue alone", () => {
    const statements = statementsOf(resources, functionName('dispatchDeliveries'));
    expect(tableStatements(statements)).toEqual([
      {
        Effect: 'Allow',
        Action: ['dynamodb:BatchGetItem', 'dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
        Resource: tableArn,
      },
    ]);
    expect(sendStatements(statements)).toEqual([{ Effect: 'Allow', Action: 'sqs:SendMessage', Resource: queueArn }]);
    // What the event source mapping needs to consume, and nothing on any other queue.
    const consume = statements.filter((statement) => actionsOf(statement).includes('sqs:ReceiveMessage'));
    expect(consume).toEqual([expect.objectContaining({ Resource: queueArn })]);
    expect(actionsOf(consume[0]!)).toEqual(expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility']));
  });

  it('grants the sweep what the due-time index and the resume jobs need, and SendMessage on the delivery queue', () => {
    const statements = statementsOf(resources, functionName('sweepDeliveries'));
    expect(DELIVERY_SWEEP.queriedIndexes).toEqual([GSI2.indexName, GSI3.indexName]);
    expect(tableStatements(statements)).toEqual([
      {
        Effect: 'Allow',
        Action: ['dynamodb:BatchGetItem', 'dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
        Resource: tableArn,
      },
      { Effect: 'Allow', Action: 'dynamodb:Query', Resource: [indexArn(GSI2.indexName), indexArn(GSI3.indexName)] },
    ]);
    expect(sendStatements(statements)).toEqual([{ Effect: 'Allow', Action: 'sqs:SendMessage', Resource: queueArn }]);
  });

  it('gives the queue URL and SendMessage only to the routes that queue deliveries, the two delivery functions, and per chain its follower, its quarantine function and its backfill runner', () => {
    for (const route of routeList) {
      const statements = statementsOf(resources, functionName(route.operationId));
      if (route.queuesDeliveries) {
        expect(queueUrlOf(route.operationId)).toEqual({ Ref: queueId });
        expect(sendStatements(statements)).toEqual([{ Effect: 'Allow', Action: 'sqs:SendMessage', Resource: queueArn }]);
      } else {
        expect(queueUrlOf(route.operationId)).toBeUndefined();
        expect(sendStatements(statements)).toEqual([]);
      }
    }
    const withQueueUrl = ofType(resources, 'AWS::Lambda::Function').filter(([, fn]) => fn.Properties.Environment?.Variables?.DELIVERY_QUEUE_URL);
    // Per followed chain: its follower, the function that retakes its quarantined blocks and its backfill runner.
    expect(withQueueUrl).toHaveLength(routeList.filter((route) => route.queuesDeliveries).length + 2 + 3 * stage.followedChains.length);
    expect(queueUrlOf('dispatchDeliveries')).toEqual({ Ref: queueId });
    expect(queueUrlOf('sweepDeliveries')).toEqual({ Ref: queueId });
  });

  it.each([routes.listDeliveries, routes.recoverFailedDeliveries])('lets $operationId query gsi2, where messages are by status, and no other index', (route) => {
    const queries = tableStatements(statementsOf(resources, functionName(route.operationId))).filter((statement) => actionsOf(statement).includes('dynamodb:Query'));
    const onTable = (route.tableActions as readonly string[]).includes('dynamodb:Query') ? [tableArn] : [];
    expect(queries.map((statement) => statement.Resource)).toEqual([...onTable, indexArn(GSI2.indexName)]);
  });
});
