import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
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

  it('synthesizes the dev and prod stages offline, side by side, with bundled Lambda code', async () => {
    const [dev, prod] = await Promise.all([synth('dev', path.join(outdirPath(), 'dev')), synth('prod', path.join(outdirPath(), 'prod'))]);
    for (const [template, stage] of [[dev, 'dev'], [prod, 'prod']] as const) {
      const functions = Object.values(template.Resources as Record<string, any>).filter(
        (resource) => resource.Type === 'AWS::Lambda::Function' && resource.Properties.Runtime === 'nodejs22.x',
      );
      expect(functions.length).toBeGreaterThan(0);
      for (const fn of functions) {
        const asset = fn.Metadata['aws:asset:path'];
        expect(existsSync(path.join(outdirPath(), stage, asset, 'index.js'))).toBe(true);
        expect(existsSync(path.join(outdirPath(), stage, asset, 'index.js.map'))).toBe(true);
      }
    }
  }, 120_000);
});
