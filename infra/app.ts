import { App } from 'aws-cdk-lib';
import { stageSettings } from '../lib/config/stages';
import { stackNameFor } from './stack-outputs';
import { WebhooksStack } from './webhooks-stack';

// One stack per stage: `npx cdk deploy -c stage=prod`. Without -c stage, `dev`.
const app = new App();
const stage = stageSettings(String(app.node.tryGetContext('stage') ?? 'dev'));
new WebhooksStack(app, stackNameFor(stage.name), {
  stage,
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
