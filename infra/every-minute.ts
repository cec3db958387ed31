import { Duration } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { Construct } from 'constructs';

/**
 * `fn` invoked once a minute by a rule, and never retried, neither by the rule nor as an asynchronous
 * invocation: a failed run's work is taken up by the next minute's, which a retry would overlap.
 */
export function everyMinute(scope: Construct, id: string, rule: { ruleName: string; description: string }, fn: lambda.Function): events.Rule {
  fn.configureAsyncInvoke({ retryAttempts: 0 });
  return new events.Rule(scope, id, { ...rule, schedule: events.Schedule.rate(Duration.minutes(1)), targets: [new targets.LambdaFunction(fn, { retryAttempts: 0 })] });
}
