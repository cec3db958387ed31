import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { LAMBDA_RUNTIME } from '../../infra/bundling';
import { useTempDir } from '../support/temp-dir';
import path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.resolve(__dirname, '../..');
const run = promisify(execFile);

/** `npx cdk synth` as a user runs it: offline, no AWS credentials, no Docker, Lambdas bundled by esbuild. */
async function synth(stage: string, outdir: string) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('AWS_')));
  await run(path.join(ROOT, 'node_modules/.bin/cdk'), ['synth', '-c', `stage=${stage}`, '-o', outdir, '--quiet'], {
    cwd: ROOT,
    env: { ...env, CDK_DISABLE_VERSION_CHECK: 'true', CDK_CLI_NOTICES: 'false' },
  });
  return JSON.parse(await readFile(path.join(outdir, `webhooks-${stage}.template.json`), 'utf8'));
}

describe('cdk synth', () => {
  const outdirPath = useTempDir('cdk-out-');

  // One stage through the CLI: the stages differ only in settings, which the template tests synthesize
  // in-process for each stage; bundling every Lambda twice would double the test's minute of CPU.
  it('synthesizes the prod stage offline with bundled Lambda code', async () => {
    const template = await synth('prod', outdirPath());
    const functions = Object.values(template.Resources as Record<string, any>).filter(
      (resource) => resource.Type === 'AWS::Lambda::Function' && resource.Properties.Runtime === LAMBDA_RUNTIME.name,
    );
    expect(functions.length).toBeGreaterThan(0);
    for (const fn of functions) {
      const asset = fn.Metadata['aws:asset:path'];
      expect(existsSync(path.join(outdirPath(), asset, 'index.js'))).toBe(true);
      expect(existsSync(path.join(outdirPath(), asset, 'index.js.map'))).toBe(true);
    }
  }, 120_000);
});
