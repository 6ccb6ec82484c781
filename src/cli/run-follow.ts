import { isSettled } from '../scoring/index.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { BatchScorerError, errorCode, errorMessage } from '../errors.js';
import { isDroppedCall, runNotFound, type RunQueue, type RunStatus } from '../queue/index.js';
import { enqueueCommand } from './resume-command.js';

/** How `followRun` reads and shows a run. */
export interface FollowOptions {
  /** Milliseconds between two reads. */
  everyMs: number;
  /**
   * The command that enqueued the run, for a run just enqueued: it is known to exist, so not
   * finding it even at the first read means it vanished. Without it, a run not found at the first
   * read is E_RUN_NOT_FOUND, and the command to resume a vanished run is made from its job.
   */
  enqueuedBy?: string;
  /**
   * Shows a status read, with the lines the run's job logged since the last read (milestones,
   * failed attempts: see readFailedAttempt); its own reads of Redis are asked again as the status's are.
   */
  show: (status: RunStatus, logs: string[]) => void | Promise<void>;
}

/**
 * Follows a queued run until it ends (`enqueue --wait`, `status <runId> --watch`) and answers its
 * last status. A Redis restart delays a run: a read cut by the dropped connection is asked again
 * without a word, and the next read waits for Redis to be back (CONNECT_TIMEOUT_MS at most, see
 * OwnConnectionQueue); past that, one E_REDIS_UNAVAILABLE in our words ends the following. A read
 * that fails otherwise is said on stderr and asked again. A run no longer on the queue once Redis
 * answers has vanished (a Redis restart without persistence, its keys removed): E_RUN_LOST at
 * once, naming its folder and the command that resumes it, instead of waiting for a run that
 * will never end.
 */
export async function followRun(queue: RunQueue, runId: string, options: FollowOptions): Promise<RunStatus> {
  let last: RunStatus | undefined;
  /** The job log lines shown so far. */
  let logged = 0;
  for (; ; await sleep(options.everyMs)) {
    let status: RunStatus | undefined;
    try {
      status = await queue.get(runId);
      // Read after the status: what the job logged before it ended comes with its end.
      const logs = status ? await queue.logs(runId, logged) : [];
      if (status) await options.show(status, logs);
      logged += logs.length;
    } catch (err) {
      const followed = last !== undefined || options.enqueuedBy !== undefined;
      if (followed && errorCode(err) === 'E_REDIS_UNAVAILABLE') throw stoppedFollowing(runId, err);
      const dropped = isDroppedCall(err);
      if (!followed && !dropped) throw err;
      if (!dropped) process.stderr.write(`batch-scorer: ${errorMessage(err)}; asking again\n`);
      continue;
    }
    if (!status) {
      const resume = options.enqueuedBy ?? (last && enqueueCommand(last));
      if (resume === undefined) throw runNotFound(runId);
      throw runLost(runId, resume, last?.folder);
    }
    last = status;
    if (isSettled(status.state)) return status;
  }
}

/** Redis gone while following a run (`unavailable`, E_REDIS_UNAVAILABLE): the run is the workers', to follow again once Redis is back. */
function stoppedFollowing(runId: string, unavailable: unknown): BatchScorerError {
  return new BatchScorerError(
    'E_REDIS_UNAVAILABLE',
    `${errorMessage(unavailable)}; stopped following run ${runId}: once Redis answers, batch-scorer status ${runId} --watch follows it again`,
    { cause: unavailable },
  );
}

/** A followed run that vanished from the queue, with how to resume it. */
function runLost(runId: string, resume: string, folder?: string): BatchScorerError {
  const kept = folder ? `; the segments it finished are kept in ${folder}` : '';
  return new BatchScorerError(
    'E_RUN_LOST',
    `run ${runId} vanished from the queue (Redis restarted without persistence, or its keys were removed)${kept}; enqueue it again under its run id to resume it: ${resume}`,
  );
}
