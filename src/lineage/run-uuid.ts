import { createHash } from 'node:crypto';

/** The namespace of batch-scorer's name-based run UUIDs: fixed, so a run's UUID is the same in every process and release. */
const RUN_NAMESPACE = Buffer.from('ba1f5d91442648839c4700ab1b7168b2', 'hex');

/**
 * The OpenLineage run id of a run: a name-based UUID (version 5, RFC 9562: SHA-1 of a namespace
 * and the name) of its folder, `<out>/<runId>`. The same run gives the same UUID at its start and
 * at its end, in whichever process hears them, and two runs of one `--run-id` under two outputs
 * give two.
 */
export function lineageRunId(folder: string): string {
  const hash = createHash('sha1').update(RUN_NAMESPACE).update(folder, 'utf8').digest();
  hash[6] = (hash[6] & 0x0f) | 0x50;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
