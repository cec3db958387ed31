import { randomBytes } from 'node:crypto';
import type { Stats } from 'node:fs';
import { chmod, lstat, mkdir, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { readKeyFile, writeKeyFile } from './key-file';

/** Where `npm start` and the CLIs keep the service's data when DATA_DIR is not set. */
export const DEFAULT_DATA_DIR = '.data';

/** DATA_DIR, or the default: the directory `npm start` uses, and so the CLIs. */
export const dataDirOf = (env: NodeJS.ProcessEnv): string => env.DATA_DIR || DEFAULT_DATA_DIR;

/**
 * Makes DATA_DIR private to its owner: it holds every account's secret (in the store's LevelDB log,
 * for one), the API keys' files and the store's credential. From here on this process, and every
 * process it starts (the store, anvil), creates files 0600 and directories 0700 (umask 077); a
 * directory made before, with looser modes, is tightened. Returns how many entries were tightened.
 */
export async function makeDataDirPrivate(dataDir: string): Promise<number> {
  process.umask(0o077);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  return tighten(dataDir, await stat(dataDir));
}

async function tighten(entry: string, stats: Stats): Promise<number> {
  // A link inside is left alone: what it points to may be anyone's, outside DATA_DIR.
  if (stats.isSymbolicLink()) return 0;
  let tightened = 0;
  if ((stats.mode & 0o077) !== 0) {
    await chmod(entry, stats.mode & 0o700);
    tightened += 1;
  }
  if (stats.isDirectory()) {
    for (const name of await readdir(entry)) {
      const inside = path.join(entry, name);
      tightened += await tighten(inside, await lstat(inside));
    }
  }
  return tightened;
}

/** Where DATA_DIR keeps the credential its store's requests must be signed with. */
export const storeCredentialFile = (dataDir: string) => path.join(dataDir, 'store-credential');

/** DATA_DIR's store credential file, made with a new random secret on the directory's first use. */
export async function ensureStoreCredential(dataDir: string): Promise<string> {
  const file = storeCredentialFile(dataDir);
  if (!(await readKeyFile(file))) await writeKeyFile(file, randomBytes(32).toString('hex'));
  return file;
}
