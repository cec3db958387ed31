import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify, stripVTControlCharacters } from 'node:util';
import { StartupError } from './local/startup-error';

const PROJECT_ROOT = path.resolve(__dirname, '..');
const CONSOLE_ROOT = path.join(PROJECT_ROOT, 'console');

/** The built console: what the local gateway serves and the CDK stack uploads. */
export const CONSOLE_DIST = path.join(CONSOLE_ROOT, 'dist');

/** In the built console: the hash of the inputs it was built from. */
const BUILD_HASH_FILE = '.build-hash';

/** What the build reads, relative to the project root: a change to any of them rebuilds. */
const BUILD_INPUTS = ['console/src', 'lib/text.ts', 'console/index.html', 'console/vite.config.ts', 'console/tsconfig.json', 'infra/console-headers.ts', 'package-lock.json'];

/** Temporary build folders beside dist: `.dist-<pid>-<random>`, so that a folder left by a killed build can be told from one under way. */
const TEMP_PREFIX = '.dist-';

const run = promisify(execFile);

/**
 * Builds the console with Vite unless console/dist was built from the current sources. The build goes
 * to a folder of its own beside dist and replaces dist by renames, so that builds started at once (two
 * jest lines, npm start) never write into each other's output or serve a half-written one: the first
 * to finish puts its build in place, and the others, finding dist built from the same sources, drop
 * theirs. A failed build is a StartupError carrying Vite's output.
 * Returns the built console's directory (CONSOLE_DIST).
 */
export async function ensureConsoleBuilt(): Promise<string> {
  const hash = await consoleSourceHash();
  if ((await builtHash(CONSOLE_DIST)) === hash) return CONSOLE_DIST;
  await removeAbandonedBuilds();
  const building = path.join(CONSOLE_ROOT, `${TEMP_PREFIX}${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    await buildInto(building);
    await writeFile(path.join(building, BUILD_HASH_FILE), hash);
    await replaceDist(building, hash);
  } finally {
    await rm(building, { recursive: true, force: true });
  }
  return CONSOLE_DIST;
}

async function buildInto(outDir: string) {
  const vite = path.join(PROJECT_ROOT, 'node_modules/vite/bin/vite.js');
  try {
    await run(process.execPath, [vite, 'build', '--config', path.join(CONSOLE_ROOT, 'vite.config.ts'), '--outDir', outDir, '--emptyOutDir', '--logLevel', 'warn'], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, NODE_ENV: 'production', NO_COLOR: '1', VITE_CONFIG_NATIVE_IGNORE_WARNING: 'true' },
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    // Without the stack frames of Vite's own code, which say nothing about the console's.
    const output = stripVTControlCharacters(`${stdout}\n${stderr}`)
      .split('\n')
      .filter((line) => !/^\s+at /.test(line))
      .join('\n');
    throw new StartupError(buildFailure(output.trim()));
  }
}

/** Vite's output, led by what to do when the cause is a native binary npm did not install (it otherwise crashes with a stack trace). */
function buildFailure(output: string): string {
  if (/Cannot find native binding|Cannot find module '[^']*\.node'/.test(output)) {
    return (
      `the console could not be built: a native binary Vite needs (rolldown's or lightningcss's, installed by npm as an ` +
      `optional dependency for each platform) is missing for ${process.platform}-${process.arch}. Run \`npm ci\` again with a ` +
      `registry that has it for this platform (docs/local.md#installing). Vite said: ${output.split('\n').find((line) => /^\s*Error: /.test(line))?.trim() ?? output}`
    );
  }
  return `the console could not be built (vite build): ${output}`;
}

/** Puts the build in `building` at dist, unless a build of the same sources finished there first. */
async function replaceDist(building: string, hash: string) {
  if ((await builtHash(CONSOLE_DIST)) === hash) return;
  // A directory cannot be renamed over a non-empty one: the old one is moved aside first.
  const old = `${building}-old`;
  await rename(CONSOLE_DIST, old).catch(ignoreMissing);
  try {
    await rename(building, CONSOLE_DIST);
  } catch (error) {
    // Another build put its dist in place between the two renames: the same sources, if its hash says so.
    if ((await builtHash(CONSOLE_DIST)) !== hash) throw error;
  } finally {
    await rm(old, { recursive: true, force: true });
  }
}

/** Build folders whose process is gone (killed mid-build). */
async function removeAbandonedBuilds() {
  const entries = await readdir(CONSOLE_ROOT);
  for (const entry of entries) {
    const pid = entry.startsWith(TEMP_PREFIX) ? Number(entry.slice(TEMP_PREFIX.length).split('-', 1)[0]) : NaN;
    if (Number.isInteger(pid) && !processExists(pid)) await rm(path.join(CONSOLE_ROOT, entry), { recursive: true, force: true });
  }
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function builtHash(dist: string): Promise<string | undefined> {
  return readFile(path.join(dist, BUILD_HASH_FILE), 'utf8').catch(() => undefined);
}

/** A hash of every build input's path and content. */
async function consoleSourceHash(): Promise<string> {
  const hash = createHash('sha256');
  const files = (await Promise.all(BUILD_INPUTS.map(filesUnder))).flat().sort();
  for (const file of files) {
    hash.update(`${file}\0`);
    hash.update(await readFile(path.join(PROJECT_ROOT, file)));
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** The files at or under `relative` (a file, or a directory searched recursively), as paths relative to the project root. */
async function filesUnder(relative: string): Promise<string[]> {
  const entries = await readdir(path.join(PROJECT_ROOT, relative), { withFileTypes: true, recursive: true }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOTDIR') return undefined;
    throw error;
  });
  if (!entries) return [relative];
  return entries.filter((entry) => entry.isFile()).map((entry) => path.relative(PROJECT_ROOT, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'));
}

function ignoreMissing(error: NodeJS.ErrnoException) {
  if (error.code !== 'ENOENT') throw error;
}

// `tsx infra/console-build.ts`: npm test builds once before its jest lines start, which then find it built.
if (require.main === module) {
  ensureConsoleBuilt().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
