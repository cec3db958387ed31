import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * A secret kept in a file of its own (the page-token key, the first dev API key): readable by its
 * owner only, and written whole or not at all (a temporary file renamed over it), so that a crash
 * while writing cannot leave it empty or cut short.
 */
export async function writeKeyFile(file: string, value: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${value}\n`, { mode: 0o600 });
  await rename(temporary, file);
}

/** The file's content without surrounding whitespace, or undefined when there is no such file. */
export async function readKeyFile(file: string): Promise<string | undefined> {
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** A key given to a CLI by `--key-file`: the file's content, or standard input's for `-`, without surrounding whitespace. */
export async function keyFileArgument(file: string): Promise<string> {
  if (file !== '-') return (await readFile(file, 'utf8')).trim();
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  return text.trim();
}
