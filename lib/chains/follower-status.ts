/**
 * What a chain's follower knows of itself, whatever its steps do: the head and the checkpoint as it
 * last saw them, its failures, whether its node is the configured chain. From these, one decision
 * of its state (stalled, unreachable, ...), and of which failures are worth a log line.
 */
import type { FollowerFault } from '../schemas/chains';
import type { FollowerStatus } from '../store/chains';
import { faultKind } from './faults';
import type { WrongChainError } from './node-identity';

/** Blocks between the safe head and the checkpoint beyond which the follower is catching up, not following. */
export const CATCHING_UP_BLOCKS = 10;

/** What the state is decided from. */
export interface FollowerFacts {
  /** The node answers another chain: nothing is followed. */
  wrongChain: boolean;
  /** The last ask for the head failed. */
  headFailing: boolean;
  /** The head minus the chain's confirmations: the newest block the follower may take. */
  safeHead?: number;
  checkpoint?: number;
  /** Since when the checkpoint has stayed where it is while the safe head was past it. */
  behindSince?: number;
}

/** The follower's state: one decision, from what it knows, the clock, and how long a still checkpoint may stay still. */
export function followerStateOf(facts: FollowerFacts, now: number, stalledAfterMs: number): { state: FollowerStatus['state']; stalledSince?: number } {
  if (facts.wrongChain) return { state: 'stopped' };
  if (facts.headFailing) return { state: 'unreachable' };
  if (facts.behindSince !== undefined && now - facts.behindSince >= stalledAfterMs) return { state: 'stalled', stalledSince: facts.behindSince };
  if (facts.safeHead !== undefined && facts.checkpoint !== undefined && facts.safeHead - facts.checkpoint > CATCHING_UP_BLOCKS) return { state: 'catchingUp' };
  return { state: 'following' };
}

/** A run of failed steps: what the log says of it, once per kind. */
export interface FailureRun {
  kind: string;
  /** When the first failure of the run was. */
  since: number;
  failures: number;
  /** When a line was last logged of it. */
  loggedAt: number;
}

/** Whether a failed step is logged: when a run of failures begins, when its kind changes, and as a reminder every `reminderMs`. */
export type FailureLog = { why: 'began' | 'reminder'; run: FailureRun } | { why: 'changed'; run: FailureRun; previously: string } | undefined;

export class FollowerWatch {
  head: { number: number; seenAt: number } | undefined;
  checkpoint: number | undefined;
  private behindSince: number | undefined;
  private headFailing = false;
  private wrongChain: WrongChainError | undefined;
  private fault: FollowerFault | undefined;
  private failing: FailureRun | undefined;
  private succeededAt = 0;

  constructor(
    private readonly confirmations: number,
    private readonly stalledAfterMs: number,
    private readonly reminderMs: number,
  ) {}

  /** The node answered its head: returns whether it had failed to before (the node is back). */
  sawHead(number: number, now: number): boolean {
    const wasFailing = this.headFailing;
    this.head = { number, seenAt: now };
    this.headFailing = false;
    this.checkBehind(now);
    return wasFailing;
  }

  headFailed(error: unknown, now: number): void {
    this.headFailing = true;
    this.noteFault(faultKind(error), now);
  }

  sawCheckpoint(number: number, now: number): void {
    if (number !== this.checkpoint) this.behindSince = undefined;
    this.checkpoint = number;
    this.checkBehind(now);
  }

  /**
   * Goes on from what the last follower recorded (a Lambda's run lasts a minute, less than a stall):
   * a checkpoint that has not moved since stays behind since when it was.
   */
  resume(recorded: FollowerStatus | undefined): void {
    if (!recorded?.behind || this.checkpoint !== undefined) return;
    this.checkpoint = recorded.behind.checkpoint;
    this.behindSince = recorded.behind.since;
  }

  /** Another follower may move the checkpoint meanwhile: what this one knew of it is read again. */
  forgetCheckpoint(): void {
    this.checkpoint = undefined;
    this.behindSince = undefined;
  }

  private checkBehind(now: number): void {
    const behind = this.head !== undefined && this.checkpoint !== undefined && this.head.number - this.confirmations > this.checkpoint;
    this.behindSince = behind ? (this.behindSince ?? now) : undefined;
  }

  /** The last failure, and since when failures of its kind have followed one another without a step succeeding. */
  private noteFault(kind: string, now: number): void {
    const goingOn = this.fault?.kind === kind && this.fault.at >= this.succeededAt;
    this.fault = { kind, since: goingOn ? this.fault!.since : now, at: now };
  }

  /** A step failed: whether (and why) it is logged. */
  stepFailed(error: unknown, now: number): FailureLog {
    const kind = faultKind(error);
    this.noteFault(kind, now);
    const run = this.failing;
    if (!run) {
      this.failing = { kind, since: now, failures: 1, loggedAt: now };
      return { why: 'began', run: this.failing };
    }
    run.failures += 1;
    if (run.kind !== kind) {
      const previously = run.kind;
      Object.assign(run, { kind, loggedAt: now });
      return { why: 'changed', run, previously };
    }
    if (now - run.loggedAt < this.reminderMs) return undefined;
    run.loggedAt = now;
    return { why: 'reminder', run };
  }

  /** A step succeeded: the run of failures it ends, if any, to be logged once. */
  stepSucceeded(now: number): FailureRun | undefined {
    this.succeededAt = now;
    const run = this.failing;
    this.failing = undefined;
    return run;
  }

  /** The node answered another chain: returns whether it is news (logged once). */
  nodeOfWrongChain(error: WrongChainError, now: number): boolean {
    const news = this.wrongChain?.kindOfFault !== error.kindOfFault;
    this.wrongChain = error;
    this.noteFault(error.kindOfFault, now);
    return news;
  }

  get ofWrongChain(): boolean {
    return this.wrongChain !== undefined;
  }

  /** The node answered the configured chain: returns whether it had answered another before. */
  nodeOfTheChain(): boolean {
    const was = this.wrongChain !== undefined;
    this.wrongChain = undefined;
    return was;
  }

  status(now: number, rpc: FollowerStatus['rpc'], traceMethod: FollowerStatus['traceMethod']): FollowerStatus {
    const facts: FollowerFacts = {
      wrongChain: this.wrongChain !== undefined,
      headFailing: this.headFailing,
      safeHead: this.head && this.head.number - this.confirmations,
      checkpoint: this.checkpoint,
      behindSince: this.behindSince,
    };
    return {
      ...followerStateOf(facts, now, this.stalledAfterMs),
      ...(this.fault ? { lastError: { ...this.fault } } : {}),
      ...(traceMethod ? { traceMethod } : {}),
      rpc,
      recordedAt: now,
      ...(this.behindSince !== undefined && this.checkpoint !== undefined ? { behind: { checkpoint: this.checkpoint, since: this.behindSince } } : {}),
    };
  }
}

/** Whether a status says something other than the one recorded before: recorded at once, not at the next interval. */
export function statusChanged(recorded: FollowerStatus | undefined, status: FollowerStatus): boolean {
  return (
    !recorded ||
    recorded.state !== status.state ||
    recorded.stalledSince !== status.stalledSince ||
    recorded.lastError?.kind !== status.lastError?.kind ||
    recorded.traceMethod !== status.traceMethod
  );
}
