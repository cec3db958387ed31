import { App } from 'aws-cdk-lib';
import { stageSettings, type StageSettings } from '../lib/config/stages';
import { ensureConsoleBuilt } from './console-build';
import { stackNameFor } from './stack-outputs';
import { WebhooksStack } from './webhooks-stack';

// One stack per stage: `npx cdk deploy -c stage=prod`. Without -c stage, `dev`.
// `-c wafRateLimitPer5Minutes=2000` turns on the stage's WAF rate rule (StageSettings.waf); `-c alarmEmail=ops@example.com`
// subscribes that address to the stage's alarms.
// The console's files are uploaded from console/dist: built first, unless already built from the current sources.
async function main() {
  await ensureConsoleBuilt();
  const app = new App();
  const stage = withContext(stageSettings(String(app.node.tryGetContext('stage') ?? 'dev')), app.node.tryGetContext('wafRateLimitPer5Minutes'));
  const alarmEmail = app.node.tryGetContext('alarmEmail') as string | undefined;
  new WebhooksStack(app, stackNameFor(stage.name), {
    stage,
    ...(alarmEmail ? { alarmEmail } : {}),
    env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  });
  app.synth();
}

function withContext(stage: StageSettings, wafRateLimit: unknown): StageSettings {
  return wafRateLimit === undefined ? stage : { ...stage, waf: { rateLimitPer5Minutes: Number(wafRateLimit) } };
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
