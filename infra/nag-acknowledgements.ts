import { Validations, type Stack } from 'aws-cdk-lib';
import type { StageSettings } from '../lib/config/stages';

/**
 * The findings of cdk-nag's AwsSolutions pack that the stage has by design, each with why. They are
 * acknowledged on the stack; test/infra/cdk-nag.test.ts runs the pack on every stage, and any other
 * finding fails it. The console's own (CDK's upload function, CloudFront) are acknowledged in
 * console-hosting.ts, beside what they are about.
 */
export function acknowledgeDesignFindings(stack: Stack, stage: StageSettings): void {
  const findings: Record<string, string> = {
    'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]':
      "Lambda's basic execution role of the functions CDK makes a role for (logs on any log group, as AWS keeps it); a chain's shared role writes its own log group alone",
    'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]':
      "API Gateway's account role for its execution and access logs, which AWS keeps current",
    'AwsSolutions-IAM5[Resource::*]': "X-Ray's PutTraceSegments and PutTelemetryRecords, which take no narrower resource (the stack test allows no other statement on *)",
    'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:apigateway:<AWS::Region>::/apikeys/*]':
      'Deleting API Gateway keys: any key id, under the condition that it is tagged with this stage',
    'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:apigateway:<AWS::Region>::/tags/*]':
      'Tagging the API Gateway key being made: only with this stage, and only a key not tagged yet',
    'AwsSolutions-APIG2': "Every handler validates its input against the route's schemas and answers in the hosted API's error shape, which API Gateway's validation would not",
    'AwsSolutions-APIG4': 'Only the keyless methods: the 405 answers (ANY), GET /health and GET /openapi.json; every routed method takes the API key authorizer (stack test)',
    'AwsSolutions-COG4': "Callers authenticate with the hosted API's x-service-api-key, checked by the REQUEST authorizer, not with Cognito",
    'AwsSolutions-SMG4':
      "The page-token key's rotation would void every page token in use; a chain's RPC URL secret holds the URL an operator puts there, which only its provider can rotate",
    ...(stage.waf
      ? {}
      : { 'AwsSolutions-APIG3': 'WAF is opt-in per stage (billed per web ACL and request): the usage plans throttle and meter per key (docs/deploy-aws.md)' }),
  };
  for (const [id, reason] of Object.entries(findings)) Validations.of(stack).acknowledge({ id, reason });
}
