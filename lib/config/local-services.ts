import { readFileSync } from 'node:fs';
import { ConfigurationError } from './runtime';

/** Whether `url` is plain HTTP on this machine: one of `npm start`'s stand-ins for AWS (the embedded store, the local queue endpoint). */
export function isLoopbackHttpUrl(url: string): boolean {
  return /^http:\/\/(127\.0\.0\.1|localhost)[:/]/.test(url);
}

/**
 * What requests to `npm start`'s stand-ins for AWS are signed with: the embedded store's secret read
 * from `credentialFile` (they check the signature, so the secret never travels), or, without one,
 * anything (an in-memory store accepts any credentials; a machine without an AWS profile has none).
 */
export function localServiceCredentials(credentialFile: string | undefined): { accessKeyId: string; secretAccessKey: string } {
  return { accessKeyId: 'local', secretAccessKey: credentialFile ? readCredential(credentialFile) : 'local' };
}

function readCredential(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (error) {
    throw new ConfigurationError(`cannot read the embedded store's credential file ${file}: ${(error as Error).message}`);
  }
}
