/**
 * The background work as a process of its own, started by background-process.ts over an IPC
 * channel (supervisor.ts's protocol): it says `ready`, starts on `start` with the configuration it is given, stops on `stop` or SIGTERM,
 * and exits at once when the channel closes, which is how it learns that its parent died.
 */
import './node-version-warning';
import { useRuntimeConfig } from '../../lib/config/runtime';
import type { BackgroundProcessMessage } from './background-process';
import { startBackgroundWork, type BackgroundWork } from './background-work';
import { dataDirOf } from './data-dir';
import { logDeliveriesToFile } from './local-logger';
import { sendToParent } from './supervisor';

let work: BackgroundWork | undefined;
let stopping = false;

async function stop() {
  if (stopping) return;
  stopping = true;
  await work?.stop();
  process.exit(0);
}

// Ctrl-C in a terminal signals the whole process group: the parent decides when this stops, after
// the API's requests under way have finished.
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => void stop());
process.on('disconnect', () => process.exit(0));
process.on('message', (message: BackgroundProcessMessage) => {
  if (message.type === 'start' && !work) {
    useRuntimeConfig(message.settings.config);
    logDeliveriesToFile(dataDirOf(process.env));
    startBackgroundWork(message.settings.chains).then(
      (started) => {
        work = started;
        void sendToParent<BackgroundProcessMessage>({ type: 'started', pid: process.pid });
      },
      (error: Error) => {
        process.stderr.write(`the background work did not start: ${error.message}\n`);
        process.exit(1);
      },
    );
  } else if (message.type === 'stop') void stop();
});
void sendToParent<BackgroundProcessMessage>({ type: 'ready' });
