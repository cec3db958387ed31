import { existsSync } from 'node:fs';
import { DEFAULT_DYNAMODB_PORT, readRuntimeConfig, useRuntimeConfig } from '../../lib/config/runtime';
import { dataDirOf, storeCredentialFile } from './data-dir';
import { isListening } from './listening';

/** Where the store `npm start` runs was found, or that nothing listens where it would be. */
export type RunningStore = { at: 'endpoint'; endpoint: string } | { at: 'port'; port: number } | { at: 'nothing'; port: number };

/**
 * Points this process's store client at the store `npm start` runs, found as npm start finds it:
 * DYNAMODB_ENDPOINT when set; else the store listening on DYNAMODB_PORT, signed with DATA_DIR's
 * credential. When nothing listens there, changes nothing and says so: the caller decides whether
 * to open DATA_DIR itself (the keys CLI) or give up (the chain CLI).
 */
export async function useRunningStore(env: NodeJS.ProcessEnv = process.env): Promise<RunningStore> {
  if (env.DYNAMODB_ENDPOINT) return { at: 'endpoint', endpoint: env.DYNAMODB_ENDPOINT };
  const port = Number(env.DYNAMODB_PORT || DEFAULT_DYNAMODB_PORT);
  if (!(await isListening(port))) return { at: 'nothing', port };
  // DATA_DIR decides, as for npm start. Without a credential file there, the store's refusal names its own.
  const credentialFile = storeCredentialFile(dataDirOf(env));
  useRuntimeConfig(readRuntimeConfig({ ...env, DYNAMODB_PORT: String(port), ...(existsSync(credentialFile) && { DYNAMODB_CREDENTIAL_FILE: credentialFile }) }));
  return { at: 'port', port };
}
