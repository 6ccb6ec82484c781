import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FinishedSegments } from '../../src/scoring/finished-segments.js';
import { buildOutputSchema, predictionMembers } from '../../src/scoring/output-schema.js';
import { ProfileAccumulator } from '../../src/scoring/prediction-profile.js';
import { runFiles, type PreparedRun } from '../../src/scoring/prepared-run.js';
import { emptyCounts } from '../../src/scoring/segment-counts.js';
import { readSegmentDone, writeSegmentDone } from '../../src/scoring/segment-done.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';

const SCHEMA = buildOutputSchema(['price'], { price: 1, price_confidence: 1, price_min: 0, price_max: 2 }, ['price'], predictionMembers(undefined, false));
const SEGMENTS = 4;
const storage = createStorage();
let folder: string;
let run: PreparedRun;

/** Segment `index`'s done marker: its own rows, counts and predictions, so that a mix-up shows. */
function marker(index: number) {
  const profile = new ProfileAccumulator(SCHEMA, ['rooms']);
  const rows = 10 + index;
  for (let r = 0; r < rows; r++) {
    profile.add([index * 100 + r * 1.5, 0.9, index * 100, index * 100 + 20]);
    profile.addInputs([r % 4]);
  }
  return { ...emptyCounts(), rowsIn: rows, rowsScored: rows, requests: index + 1, bytes: { rows: rows * 7, errors: 0 }, profile: profile.toJSON(), slots: 16 };
}

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'finished-segments-'));
  // Only what FinishedSegments reads of a run: its id, folder, output schema, columns sent and segments.
  run = {
    runId: 'r1',
    folder: parseLocation(folder),
    schema: SCHEMA,
    sent: ['rooms'],
    model: { rowIdMember: null },
    input: { segments: Array.from({ length: SEGMENTS }, (_, index) => ({ index })) },
  } as unknown as PreparedRun;
  for (let i = 0; i < SEGMENTS; i++) await writeSegmentDone(storage, run, i, marker(i));
});
afterEach(() => rm(folder, { recursive: true, force: true }));

describe('FinishedSegments', () => {
  it('folds segments handed in out of order, given or read, as reading every marker at the end does', async () => {
    const atEnd = await new FinishedSegments(storage, run).all();
    const handed = new FinishedSegments(storage, run);
    handed.add(3);
    handed.add(1, await readSegmentDone(storage, run.folder, 1));
    handed.add(0);
    handed.add(3); // A segment handed in twice counts once.
    // Segment 2 is never handed in: `all` reads it.
    const result = await handed.all();
    expect(result).toEqual(atEnd);
    expect(result.counts).toMatchObject({ segments: 4, rowsIn: 10 + 11 + 12 + 13, requests: 1 + 2 + 3 + 4 });
    expect(result.done.every((d) => d.profile === null)).toBe(true);
    expect(result.profile.profile?.targets).toBeDefined();
    expect(result.profile.profile?.inputs?.[0]).toMatchObject({ column: 'rooms', kind: 'numeric', count: 10 + 11 + 12 + 13, nulls: 0 });
  });

  it('names the first segment whose marker is missing, whether handed in or not', async () => {
    await storage.remove(runFiles.segmentDone(run.folder, 2));
    const handed = new FinishedSegments(storage, run);
    handed.add(2);
    handed.add(3);
    const err = await handed.all().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'E_STORAGE' });
    expect((err as Error).message).toContain('segment 2 is not done');
    await expect(new FinishedSegments(storage, run).all()).rejects.toMatchObject({ code: 'E_STORAGE' });
  });
});
