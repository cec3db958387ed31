import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { App, Stack, Validations } from 'aws-cdk-lib';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { AwsSolutionsChecks } from 'cdk-nag';
import { stageSettings, type StageSettings } from '../../lib/config/stages';
import { WebhooksStack } from '../../infra/webhooks-stack';

interface Violation {
  ruleName: string;
  description: string;
  violatingConstructs: { constructPath: string }[];
}

/**
 * The stack `build` makes, synthesized (without bundling) under cdk-nag's AwsSolutions pack: its
 * findings not acknowledged in the code, each as `rule at construct path: description`.
 */
function unacknowledgedFindings(build: (app: App) => Stack): string[] {
  const outdir = mkdtempSync(path.join(tmpdir(), 'cdk-nag-'));
  try {
    const app = new App({ outdir, context: { 'aws:cdk:bundling-stacks': [] } });
    build(app);
    // cdk-nag 3 is a CDK policy validation plugin; Aspects.of(app).add(...), v2's form, throws with it.
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app) as never);
    try {
      app.synth();
      return [];
    } catch (error) {
      if (!String(error).includes('validation-report.json')) throw error;
      const report = JSON.parse(readFileSync(path.join(outdir, 'validation-report.json'), 'utf8')) as { pluginReports: { violations: Violation[] }[] };
      return report.pluginReports.flatMap(({ violations }) =>
        violations.flatMap(({ ruleName, description, violatingConstructs }) => violatingConstructs.map(({ constructPath }) => `${ruleName} at ${constructPath}: ${description}`)),
      );
    }
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

const stage = (name: string, overrides: Partial<StageSettings> = {}) => (app: App) => new WebhooksStack(app, `webhooks-${name}`, { stage: { ...stageSettings(name), ...overrides } });

describe("cdk-nag's AwsSolutions pack", () => {
  // Every finding the stack has by design is acknowledged in the code with its reason (infra/nag-acknowledgements.ts, infra/console-hosting.ts).
  it.each([
    ['dev', {}],
    ['prod', {}],
    ['prod', { waf: { rateLimitPer5Minutes: 2000 } }],
  ])('finds nothing unacknowledged in the %s stage (%j)', (name, overrides) => {
    expect(unacknowledgedFindings(stage(name, overrides))).toEqual([]);
  }, 60_000);

  it('reports a finding the code does not acknowledge, naming its rule and construct', () => {
    const findings = unacknowledgedFindings((app) => {
      const stack = new Stack(app, 'unacknowledged');
      new secretsmanager.Secret(stack, 'Secret');
      return stack;
    });
    expect(findings).toEqual(['AwsSolutions-SMG4 at unacknowledged/Secret/Resource: The secret does not have automatic rotation scheduled.']);
  });
});
