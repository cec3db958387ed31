import { App } from 'aws-cdk-lib';
import { stageSettings, type StageSettings } from '../lib/config/stages';
import { stackNameFor } from './stack-outputs';
import { WebhooksStack } from './webhooks-stack';

// One stack per stage: `npx cdk deploy -c stage=prod`. Without -c stage, `dev`.
// `-c wafRateLimitPer5Minutes=2000` turns on the stage's WAF rate rule (StageSettings.waf).
const app = new App();
const stage = withContext(stageSettings(String(app.node.tryGetContext('stage') ?? 'dev')), app.node.tryGetContext('wafRateLimitPer5Minutes'));
new WebhooksStack(app, stackNameFor(stage.name), {
  stage,
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});

function withContext(stage: StageSettings, wafRateLimit: unknown): StageSettings {
  return wafRateLimit === undefined ? stage : { ...stage, waf: { rateLimitPer5Minutes: Number(wafRateLimit) } };
}
