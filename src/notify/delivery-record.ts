import { z } from 'zod';
import { readRunFile, runFiles, writeRunFile } from '../scoring/index.js';
import { formatLocation, joinLocation, type Location, type Storage } from '../storage/index.js';

/**
 * `<run folder>/notifications/<delivery id>.json`: how one delivery of the run's end went, written
 * after each attempt. Beside the manifest rather than in it: the manifest is written before the
 * end is told, and a succeeded run's is never rewritten after `_SUCCESS`; one file per delivery
 * also lets workers record deliveries to several targets at once without a lost update.
 */
export const deliveryRecordSchema = z.object({
  deliveryId: z.string(),
  events: z.array(z.string()),
  /** The target's origin only: its path and query may hold a token. */
  target: z.string(),
  attempts: z.int().min(1),
  /** The HTTP status of the last attempt, null when it got none (refused, timed out). */
  lastStatus: z.int().nullable(),
  /** Why the last attempt got no answer (`ECONNREFUSED`, `timed out after 10000 ms`), null when it got one. */
  lastError: z.string().nullable(),
  /** `retrying`: the last attempt failed and another comes; `gave-up`: none will. */
  outcome: z.enum(['retrying', 'delivered', 'gave-up']),
  /** When the last attempt ended (ISO 8601). */
  at: z.string(),
});
export type DeliveryRecord = z.output<typeof deliveryRecordSchema>;

/** Records of one run a page reads at most: a run has one delivery per target. */
const RECORDS_READ = 50;

const recordsFolder = (folder: Location) => joinLocation(folder, 'notifications');

/**
 * Writes a delivery's record into its run folder, when the run has written its manifest there: a
 * run refused before it made its folder (a missing input) must not get one made by its webhook.
 */
export async function recordDelivery(storage: Storage, folder: Location, record: DeliveryRecord): Promise<void> {
  if (!(await storage.exists(runFiles.manifest(folder)))) return;
  await writeRunFile(storage, joinLocation(recordsFolder(folder), `${record.deliveryId}.json`), record, { pretty: true });
}

/** The delivery records of a run folder, in name order (at most RECORDS_READ). */
export async function readDeliveryRecords(storage: Storage, folder: Location, signal?: AbortSignal): Promise<DeliveryRecord[]> {
  const records: DeliveryRecord[] = [];
  for await (const { location } of storage.list(recordsFolder(folder), signal)) {
    if (!formatLocation(location).endsWith('.json')) continue;
    const record = await readRunFile(storage, location, deliveryRecordSchema, signal);
    if (record) records.push(record);
    if (records.length >= RECORDS_READ) break;
  }
  return records;
}
