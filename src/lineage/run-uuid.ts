import { createHash } from 'node:crypto';

/**
 * The namespaces of batch-scorer's name-based UUIDs: fixed, so a UUID is the same in every process
 * and release. One each for first attempts (the namespace every release before attempts used for
 * the whole run), later attempts and whole runs, so that no UUID of one kind is ever one of
 * another's, whatever a folder is named.
 */
const FIRST_ATTEMPT_NAMESPACE = Buffer.from('ba1f5d91442648839c4700ab1b7168b2', 'hex');
const LATER_ATTEMPT_NAMESPACE = Buffer.from('970c2ba1ea8b4179a02ee2eab5e0ea6b', 'hex');
const WHOLE_RUN_NAMESPACE = Buffer.from('73b43b3eacc24367b2a7537f8734e9db', 'hex');

/**
 * The OpenLineage run id of one attempt of a run (see run-attempt.ts): each start or resume is an
 * OpenLineage run of its own, with one START and one end. A name-based UUID (version 5, RFC 9562:
 * SHA-1 of a namespace and the name) of the run folder, `<out>/<runId>`, and the attempt: the same
 * at the attempt's start and at its end, in whichever process hears them, and two runs of one
 * `--run-id` under two outputs give two. Attempt 1's is the folder's UUID alone, as releases
 * before attempts gave the whole run, so a run one of them started ends on the UUID it started on.
 */
export function lineageRunId(folder: string, attempt = 1): string {
  return attempt === 1 ? uuid5(FIRST_ATTEMPT_NAMESPACE, folder) : uuid5(LATER_ATTEMPT_NAMESPACE, `${attempt}:${folder}`);
}

/**
 * The run as a whole, every attempt of it: the parent its attempts' events name (ParentRunFacet),
 * so that a lineage server groups them. No event is sent for it itself: it has no start or end of
 * its own (a failed run may be resumed any time).
 */
export function wholeRunId(folder: string): string {
  return uuid5(WHOLE_RUN_NAMESPACE, folder);
}

function uuid5(namespace: Buffer, name: string): string {
  const hash = createHash('sha1').update(namespace).update(name, 'utf8').digest();
  hash[6] = (hash[6] & 0x0f) | 0x50;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
