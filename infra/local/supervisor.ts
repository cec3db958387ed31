import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { StartupError } from './startup-error';

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * The messages between `npm start` and its child processes (the store, the background work, the
 * gateway's), over their IPC channels. A child says `ready` once it listens for messages (one sent
 * before is lost: its modules load asynchronously, under tsx); the parent answers `start` with its
 * settings; the child says `started` once it serves, or `failed`, and stops on `stop`. `Own` adds
 * the messages only one kind of child exchanges.
 */
export type ProcessMessage<Settings = undefined, Own = never> =
  | { type: 'ready' }
  | { type: 'start'; settings: Settings }
  | StartedMessage
  | FailedMessage
  | { type: 'stop' }
  | Own;

/** The child serves: its pid, and the port it listens on if it listens on one. */
export interface StartedMessage {
  type: 'started';
  pid: number;
  port?: number;
}

/** Why the child cannot go on; `known` when it is something the user can act on (a StartupError). */
export interface FailedMessage {
  type: 'failed';
  reason: string;
  known: boolean;
  code?: string;
}

/** How a child is told to stop: a `stop` message or a signal; SIGKILL if it has not exited after `timeoutMs`. */
export interface StopBy {
  ask: 'message' | NodeJS.Signals;
  timeoutMs: number;
}

/** When a child is ready to use; what it is ready with comes from `message` or `line`. */
export interface ReadySignal<Ready> {
  /** Reads each IPC message until it is ready: what it is ready with, or undefined to wait on; throws why it cannot start. */
  message?: (message: never) => Ready | undefined;
  /** Reads each line of its stdout (every line, so the pipe never fills), until it is ready, likewise. */
  line?: (line: string) => Ready | undefined;
  /** The error when it exits before it is ready. */
  exitedBeforeReady: (exit: ProcessExit) => Error;
  /** The error when it cannot be started at all (the 'error' event); the event's own error if absent. */
  couldNotStart?: (error: Error) => Error;
  /** How long it may take, and the error then; no limit if absent. */
  timeout?: { ms: number; error: () => Error };
}

export interface SupervisedChild<Message> {
  child: ChildProcess;
  pid: number;
  exited: Promise<ProcessExit>;
  /** Settles when it exits without having been asked to stop: it crashed or was killed. */
  unexpectedExit: Promise<ProcessExit>;
  /** Sends a message if the channel is still open. */
  send(message: Message): void;
  /** Resolves with what it is ready with, or rejects if it exits, fails or times out first. */
  whenReady<Ready>(signal: ReadySignal<Ready>): Promise<Ready>;
  /** Asks it to stop and waits for it to exit; SIGKILL after the timeout. Returns at once if it has exited already. */
  close(): Promise<void>;
}

/** Watches a child process of `npm start` from its start (given it, or a function making it) to its exit. */
export function supervise<Message = ProcessMessage<unknown>>(start: ChildProcess | (() => ChildProcess), stopBy: StopBy): SupervisedChild<Message> {
  const child = typeof start === 'function' ? start() : start;
  let stopRequested = false;
  const exited = new Promise<ProcessExit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const send = (message: Message) => {
    if (child.connected) child.send(message as object);
  };
  return {
    child,
    pid: child.pid!,
    exited,
    unexpectedExit: exited.then((exit) => (stopRequested ? new Promise<never>(() => undefined) : exit)),
    send,
    whenReady: (signal) => untilReady(child, exited, signal),
    close: async () => {
      stopRequested = true;
      await stopChildProcess(child, exited, () => (stopBy.ask === 'message' ? send({ type: 'stop' } as Message) : child.kill(stopBy.ask)), stopBy.timeoutMs);
    },
  };
}

function untilReady<Ready>(child: ChildProcess, exited: Promise<ProcessExit>, signal: ReadySignal<Ready>): Promise<Ready> {
  return new Promise<Ready>((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timeout);
      outcome();
    };
    const timeout = signal.timeout && setTimeout(() => settle(() => reject(signal.timeout!.error())), signal.timeout.ms);
    const read = (reader: (input: never) => Ready | undefined) => (input: unknown) => {
      if (settled) return;
      try {
        const ready = reader(input as never);
        if (ready !== undefined) settle(() => resolve(ready));
      } catch (error) {
        settle(() => reject(error));
      }
    };
    void exited.then((exit) => settle(() => reject(signal.exitedBeforeReady(exit))));
    child.once('error', (error) => settle(() => reject(signal.couldNotStart ? signal.couldNotStart(error) : error)));
    if (signal.message) child.on('message', read(signal.message));
    if (signal.line) createInterface({ input: child.stdout! }).on('line', read(signal.line));
  });
}

/**
 * Asks a child process to stop (`ask`: a message or a signal) and waits for it to exit, killing it
 * with SIGKILL if it has not exited after `timeoutMs`. Returns at once if it has exited already.
 */
async function stopChildProcess(child: ChildProcess, exited: Promise<unknown>, ask: () => void, timeoutMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  ask();
  const timeout = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  await exited;
  clearTimeout(timeout);
}

/**
 * The protocol's ready signal: the child is ready on `started`; `failed` rejects with `failure(message)`
 * (by default a StartupError when the reason is known, else an Error). With `settings`, the child's
 * `ready` is answered with `start` and them.
 */
export function startedSignal<Settings>(
  supervised: { send(message: { type: 'start'; settings: Settings }): void },
  options: Pick<ReadySignal<StartedMessage>, 'exitedBeforeReady'> & { settings?: Settings; failure?: (message: FailedMessage) => Error },
): ReadySignal<StartedMessage> {
  const failure = options.failure ?? ((message) => (message.known ? new StartupError(message.reason) : new Error(message.reason)));
  return {
    exitedBeforeReady: options.exitedBeforeReady,
    message: (message: ProcessMessage<Settings>) => {
      if (message.type === 'ready' && 'settings' in options) supervised.send({ type: 'start', settings: options.settings as Settings });
      if (message.type === 'failed') throw failure(message);
      return message.type === 'started' ? message : undefined;
    },
  };
}

/** Sends a child's message to its parent over the IPC channel, if it is still open; resolves once sent. */
export function sendToParent<Message extends { type: string }>(message: Message): Promise<void> {
  return new Promise((resolve) => (process.connected ? process.send!(message, undefined, {}, () => resolve()) : resolve()));
}
