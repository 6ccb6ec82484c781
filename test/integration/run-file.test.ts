import { copyFile, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BatchScorerError } from '../../src/errors.js';
import { loadPreparedRun } from '../../src/scoring/prepared-run.js';
import { SCHEMA_VERSION } from '../../src/scoring/run-file.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import { TOOL } from '../../src/version.js';
import { runCli } from '../helpers/cli.js';
import { rejection } from '../helpers/rejection.js';
import { score, useRentalsInput, useScoringFixture } from '../helpers/scoring.js';

const ROWS = 2_000;
/** Five segments of 400 rows. */
const OPTIONS = { segmentRows: 400, batchSize: 50 };
const f = useScoringFixture();
const files = useRentalsInput(ROWS);

const failure = (p: Promise<unknown>) => rejection(p, BatchScorerError);
const readJson = async (file: string) => JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
const writeJson = (file: string, value: unknown) => writeFile(file, JSON.stringify(value));

/**
 * A run that failed half-way and left its `_work` area, as a crash would: a folder stands where
 * segment 3's rows are written, so that write fails after segments 0 and 1 are done. The folder
 * is removed afterwards, so the run can resume. Returns the run folder.
 */
async function failedRun(runId: string, file = files.input): Promise<string> {
  const folder = join(f.out, runId);
  const blocker = join(folder, '_work', 'segments', '00003.csv');
  await mkdir(join(blocker, 'x'), { recursive: true });
  const err = await failure(score(file, f.out, { service: f.sim.url, runId, ...OPTIONS }));
  expect(err.code).toBe('E_STORAGE_REFUSED');
  expect(err.message).toContain('00003.csv');
  await rm(blocker, { recursive: true });
  return folder;
}

/** The done markers a failed run left, as paths. */
async function doneMarkers(folder: string): Promise<string[]> {
  const segments = join(folder, '_work', 'segments');
  const done = (await readdir(segments)).filter((f) => f.endsWith('.done.json')).sort();
  expect(done.length).toBeGreaterThanOrEqual(2);
  return done.map((f) => join(segments, f));
}

const resume = (runId: string, file = files.input) => score(file, f.out, { service: f.sim.url, runId, ...OPTIONS });

describe('run files carry a schema version and the release that wrote them', () => {
  it('stamps run.json, done markers and the manifest with schemaVersion and tool', async () => {
    const folder = await failedRun('stamped');
    for (const file of [join(folder, '_work', 'run.json'), ...(await doneMarkers(folder)), join(folder, 'manifest.json')]) {
      expect(await readJson(file)).toMatchObject({ schemaVersion: SCHEMA_VERSION, tool: { name: 'batch-scorer', version: TOOL.version } });
    }
    expect(TOOL.version).toBe('0.3.0');
    const m = await resume('stamped');
    expect(m.counts!.rowsScored).toBe(ROWS);
    expect(await readJson(join(folder, 'manifest.json'))).toMatchObject({ schemaVersion: SCHEMA_VERSION, state: 'succeeded', folder });
  });
});

describe('a run folder written by batch-scorer 0.1.0', () => {
  it('resumes to predictions byte-identical to an uninterrupted run', async () => {
    await score(files.input, f.out, { service: f.sim.url, runId: 'clean', ...OPTIONS });
    const folder = await failedRun('old');
    // 0.1.0 wrote the same content without schemaVersion and, in run.json and done markers, without tool.
    const markers = await doneMarkers(folder);
    for (const file of [join(folder, '_work', 'run.json'), ...markers]) {
      const { schemaVersion, tool, ...content } = await readJson(file);
      expect([schemaVersion, tool]).toEqual([SCHEMA_VERSION, TOOL]);
      await writeJson(file, content);
    }
    const before = f.sim.stats.predictRows;
    const m = await resume('old');
    expect(m.state).toBe('succeeded');
    // Only the segments without a done marker were scored again.
    expect(f.sim.stats.predictRows - before).toBe(ROWS - markers.length * OPTIONS.segmentRows);
    expect(await readFile(join(folder, 'predictions.csv'))).toEqual(await readFile(join(f.out, 'clean', 'predictions.csv')));
    expect(await readJson(join(folder, 'manifest.json'))).toMatchObject({ schemaVersion: SCHEMA_VERSION, tool: TOOL });
  });

  it('is refused, naming both releases, when its files are not what 0.1.0 wrote', async () => {
    const folder = await failedRun('old-foreign');
    const runJson = join(folder, '_work', 'run.json');
    const { schemaVersion: _v, tool: _t, input: _dropped, ...content } = await readJson(runJson);
    await writeJson(runJson, content);
    const err = await failure(resume('old-foreign'));
    expect(err.code).toBe('E_RUN_STATE');
    expect(err.message).toContain(`${runJson}: taken as written by batch-scorer 0.1.0 (it has no schemaVersion), this is batch-scorer ${TOOL.version}`);
    expect(err.message).toMatch(/input: Invalid input: expected object, received undefined/);
  });
});

describe('the prediction profile of a resumed run', () => {
  it('merges the profiles of the segments finished before with the new ones: the same as an uninterrupted run', async () => {
    const clean = await score(files.input, f.out, { service: f.sim.url, runId: 'profile-clean', ...OPTIONS });
    await failedRun('profile-resumed');
    const m = await resume('profile-resumed');
    expect(m.profile?.targets[0]).toMatchObject({ target: 'rental_price', count: ROWS });
    expect(m.profile).toEqual(clean.profile);
  });

  it('is null, with a warning, over done markers of a release that kept none', async () => {
    const folder = await failedRun('unprofiled');
    const markers = await doneMarkers(folder);
    for (const file of markers) {
      const { profile, ...content } = await readJson(file);
      expect(profile).toMatchObject({ relativeAccuracy: 0.01 });
      await writeJson(file, content);
    }
    const m = await resume('unprofiled');
    expect(m.state).toBe('succeeded');
    expect(m.profile).toBeNull();
    const which = markers.map((file) => Number(basename(file, '.done.json'))).join(', ');
    const warning = `${markers.length} of 5 segments (${which}) were scored by an earlier release, which kept no prediction profile`;
    expect(m.warnings.join('\n')).toContain(warning);
    expect(await readJson(join(folder, 'manifest.json'))).toMatchObject({ profile: null, warnings: [expect.stringContaining(warning)] });
  });
});

describe('a damaged or foreign run file is refused with E_RUN_STATE naming it', () => {
  it('run.json that is not JSON (cut short)', async () => {
    const folder = await failedRun('garbage');
    const runJson = join(folder, '_work', 'run.json');
    await writeFile(runJson, (await readFile(runJson, 'utf8')).slice(0, 100));
    const err = await failure(resume('garbage'));
    expect(err.code).toBe('E_RUN_STATE');
    expect(err.exitCode).toBe(2);
    expect(err.message).toMatch(new RegExp(`^${runJson} is damaged: it is not JSON \\(.+\\); score again with another --run-id`));
    // The file is left as it was, for a person to look at.
    expect((await readFile(runJson, 'utf8')).length).toBe(100);
  });

  it('the same through the CLI: exit 2 and the code', async () => {
    const folder = await failedRun('cli-garbage');
    await writeFile(join(folder, '_work', 'run.json'), '\u0000\u0001garbage');
    const r = await runCli(
      ['score', files.input, '--model', 'mindsdb/home_rentals_model', '--out', f.out, '--run-id', 'cli-garbage', '--segment-rows', '400', '--batch-size', '50'],
      { MODEL_SERVICE_URL: f.sim.url },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`batch-scorer: ${join(folder, '_work', 'run.json')} is damaged: it is not JSON`);
    // One line: a run folder that cannot be read is not offered for resuming.
    expect(r.stderr).toMatch(/^[^\n]*\[E_RUN_STATE\]\n$/);
  });

  it('a done marker of another shape', async () => {
    const folder = await failedRun('foreign');
    const [marker] = await doneMarkers(folder);
    await writeJson(marker, { schemaVersion: 1, tool: TOOL, rows: 400, ok: true });
    const err = await failure(resume('foreign'));
    expect(err.code).toBe('E_RUN_STATE');
    expect(err.message).toContain(
      `${marker}: written by batch-scorer ${TOOL.version} (schema version 1), this is batch-scorer ${TOOL.version}; it cannot be read (`,
    );
    expect(err.message).toMatch(/rowsIn: must be a number;.*; and \d+ more\): was it edited or damaged\?/);

    await writeJson(marker, ['not', 'an', 'object']);
    const array = await failure(resume('foreign'));
    expect(array.message).toContain(`${marker} is not a batch-scorer run file (Invalid input: expected object, received array)`);
  });

  it('a schema version from a later release, naming both releases', async () => {
    const folder = await failedRun('future');
    const runJson = join(folder, '_work', 'run.json');
    const stored = await readJson(runJson);
    await writeJson(runJson, { ...stored, schemaVersion: SCHEMA_VERSION + 1, tool: { name: 'batch-scorer', version: '9.1.0' } });
    const err = await failure(resume('future'));
    expect(err.code).toBe('E_RUN_STATE');
    expect(err.message).toBe(
      `${runJson}: written by batch-scorer 9.1.0 (schema version ${SCHEMA_VERSION + 1}), this is batch-scorer ${TOOL.version}, which reads schema versions up to ${SCHEMA_VERSION}: ` +
        'resume the run with batch-scorer 9.1.0 or later, or score again with another --run-id, or move the run folder aside and start the run anew',
    );
    expect((await readJson(runJson)).schemaVersion).toBe(SCHEMA_VERSION + 1);

    await writeJson(runJson, stored);
    const [marker] = await doneMarkers(folder);
    await writeJson(marker, { ...(await readJson(marker)), schemaVersion: SCHEMA_VERSION + 1 });
    const later = await failure(resume('future'));
    expect(later.message).toContain(
      `${marker}: written by batch-scorer ${TOOL.version} (schema version ${SCHEMA_VERSION + 1}), this is batch-scorer ${TOOL.version}, which reads`,
    );
  });
});

describe('a missing file is the run folder’s, or the input’s, and says which', () => {
  it('run.json deleted under a worker: E_RUN_STATE naming it, not a missing input', async () => {
    const folder = await failedRun('deleted');
    const storage = createStorage();
    try {
      const run = await loadPreparedRun(storage, parseLocation(folder));
      expect(run.folder).toEqual({ kind: 'file', path: folder });
      await rm(join(folder, '_work', 'run.json'));
      const err = await failure(loadPreparedRun(storage, parseLocation(folder)));
      expect(err.code).toBe('E_RUN_STATE');
      expect(err.message).toMatch(new RegExp(`^${join(folder, '_work', 'run.json')} is missing from its run folder: was it deleted\\?`));
    } finally {
      storage.close();
    }
  });

  it('run.json deleted beside finished segments: resuming refuses instead of planning anew', async () => {
    const folder = await failedRun('replanned');
    const runJson = join(folder, '_work', 'run.json');
    await rm(runJson);
    const before = f.sim.stats.describeRequests;
    const err = await failure(resume('replanned'));
    expect(err.code).toBe('E_RUN_STATE');
    expect(err.message).toMatch(new RegExp(`^${runJson} is missing from its run folder: was it deleted\\?`));
    // Not prepared again: a new describe could pin another model version than the finished segments used.
    expect(f.sim.stats.describeRequests).toBe(before);
  });

  it('a segment part deleted before assembly: E_RUN_STATE naming it', async () => {
    const folder = await failedRun('part');
    const [marker] = await doneMarkers(folder);
    const part = marker.replace('.done.json', '.csv');
    await rm(part);
    const err = await failure(resume('part'));
    expect(err.code).toBe('E_RUN_STATE');
    expect(err.message).toBe(
      `${part} is missing, though its segment's done marker is there: was it deleted? Delete that done marker (and the segment's .prefix.json, if there is one) to score the segment again, then resume the run`,
    );
    await rm(marker);
    expect((await resume('part')).counts!.rowsScored).toBe(ROWS);
  });

  it('the input deleted before a resume: E_INPUT_NOT_FOUND naming the input, exit 2', async () => {
    const copy = join(f.dir, 'copy.csv');
    await copyFile(files.input, copy);
    await failedRun('gone', copy);
    await rm(copy);
    const err = await failure(resume('gone', copy));
    expect(err.code).toBe('E_INPUT_NOT_FOUND');
    expect(err.exitCode).toBe(2);
    expect(err.message).toBe(`${copy}: no such file or object`);
  });
});
