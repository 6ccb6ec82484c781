import type { RunOptions } from '../config/index.js';
import {
  connectDatabase,
  ensureRunsTable,
  formatTableName,
  lockPatchesOf,
  otherRun,
  patchingRun,
  publishedRun,
  recordRun,
  type PatchingRun,
} from '../database/index.js';
import { BatchScorerError, RunFolderError } from '../errors.js';
import { shellWord } from '../shell-word.js';
import { formatLocation, type Location, parseLocation, type Storage } from '../storage/index.js';
import { manifestSchema, type Manifest } from './manifest.js';
import { checkListedFile, type PatchedRun } from './patched-run.js';
import { runFiles } from './prepared-run.js';
import type { RescoredRows } from './rescore-publish.js';
import { checkRunFolder } from './run-folder-claim.js';
import { writeRunFile } from './run-file.js';
import { doing, existingTableColumns, stageTable, type StagedTable, type StageOptions } from './table-load.js';
import { describeTarget, tableTarget, type TableTarget } from './table-options.js';
import { removeWorkFilesByName } from './work-files.js';

// A rescore of a run that wrote into a table adds the rows it scores to that table, beside the
// rows the run published, in one transaction that records the new version in the runs table.
// Its rows are not in the table before, and must be in once: so the runs table, which records
// every version published, is the truth of what a version may add. A version is published only
// where no other version of the same run was (record first, under a lock: two rescores of one run
// at once publish one of them), and a retry of a version whose publish committed publishes
// nothing more: it finishes the version's run folder from what the runs table recorded.

/** The two runs a rescore of a table run is about: the run patched and the new version, each by its run id and run folder. */
export interface TableRescore {
  target: TableTarget;
  patched: PatchedRun;
  version: { runId: string; folder: Location };
}

/**
 * Where a patched run's rows went, from its options (database, out-table, runs table), or
 * undefined for a run that wrote files; its manifest's `table` and layout must agree, or the run
 * folder was edited (E_RUN_STATE). The database is the run's own: no password is ever stored, and
 * PGPASSWORD or ~/.pgpass give it as they gave it to the run.
 */
export function patchedTableTarget(patched: PatchedRun, options: RunOptions): TableTarget | undefined {
  const target = tableTarget(patched.manifest.input.location, options);
  const recorded = patched.manifest.table;
  if (!target && !recorded) return undefined;
  const named = target && describeTarget(target);
  if (!named || !recorded || named.table !== recorded.table || named.database !== recorded.database || !patched.layout.output.tableColumns) {
    throw new RunFolderError(
      `the manifest of ${formatLocation(patched.folder)} does not say one same table in its options, its table and its layout: was it edited?`,
    );
  }
  return target;
}

/**
 * Checks, before a row is sent, what a rescore adds its rows to: the runs table must record the
 * run patched, from its run folder (its rows are in the table); the out-table must still take the
 * run's columns, as its publish checked them (a table dropped since is not made again); and no
 * other version of the run may be published: the rows it scored are in the table, and would be
 * put in twice (E_RUN_CONFLICT, saying which version to patch instead). Answers the record of this
 * very version where its publish committed already (its run folder unfinished: see
 * finishPublishedVersion); undefined for a version to score.
 */
export async function checkPatchedTable(storage: Storage, rescore: TableRescore, signal?: AbortSignal): Promise<PatchingRun | undefined> {
  const { target, patched, version } = rescore;
  const runs = formatTableName(target.runsTable);
  const db = await connectDatabase(target.database, { signal });
  try {
    const { client } = db;
    const read = <T>(step: () => Promise<T>) => doing(`reading --runs-table ${runs}`, step);
    const exists = await read(() => ensureRunsTable(client, target.runsTable, { make: false }));
    const recorded = exists ? await read(() => publishedRun(client, target.runsTable, patched.runId)) : undefined;
    if (recorded?.folder !== formatLocation(patched.folder)) {
      const what = !exists
        ? `does not exist (dropped since?)`
        : recorded
          ? `records run ${patched.runId} from ${recorded.folder ?? 'another run folder'}`
          : `records no run ${patched.runId}`;
      throw new BatchScorerError(
        'E_DATABASE_REFUSED',
        `--runs-table ${runs} ${what}: the rows of run ${patched.runId} are not known to be in ${formatTableName(target.table)}, and a rescore adds only the rows its run left out; score the corrected input anew instead`,
      );
    }
    await existingTableColumns(db, target, patched.layout.output.tableColumns!);
    const self = await read(() => publishedRun(client, target.runsTable, version.runId));
    const patcher = await read(() => patchingRun(client, target.runsTable, patched.runId));
    if (self && (self.folder !== formatLocation(version.folder) || patcher?.runId !== version.runId))
      throw otherRun(target.runsTable, version.runId, self.folder);
    if (!patcher || patcher.runId === version.runId) return patcher;
    const finished = patcher.folder === null ? undefined : await storage.exists(runFiles.success(parseLocation(patcher.folder)), signal);
    throw alreadyPatched(patched.runId, formatTableName(target.table), patcher, finished);
  } finally {
    await db.end();
  }
}

/**
 * Stages a version's rows (see stageTable) into the run's out-table, which must exist (never made
 * again); its publish records it first, once no other version of the run is recorded (see
 * checkPatchedTable), under a lock that makes a second publish of the run wait and then see the first.
 */
export function stageRescoredTable(rescored: RescoredRows): Promise<StagedTable> {
  const { storage, run, patched, log, signal } = rescored;
  const record: StageOptions['record'] = async ({ client }, table, version) => {
    await lockPatchesOf(client, table, patched.runId);
    const patcher = await patchingRun(client, table, patched.runId);
    if (patcher && patcher.runId !== version.runId) throw alreadyPatched(patched.runId, version.outTable, patcher);
    return recordRun(client, table, version);
  };
  return stageTable(storage, run, rescored.done, log, signal, { make: false, record });
}

/**
 * Finishes the run folder of a version whose publish committed (the rows are in the table, the
 * runs table records it) but whose folder was not finished (a crash, a storage failure): its
 * manifest as the runs table recorded it, then `_SUCCESS`, and its `_work` removed. Nothing is
 * sent or published again. The folder must be the version's own, its errors.jsonl as the
 * manifest lists it.
 */
export async function finishPublishedVersion(storage: Storage, rescore: TableRescore, recorded: PatchingRun, signal?: AbortSignal): Promise<Manifest> {
  const { patched, version } = rescore;
  const where = formatLocation(version.folder);
  if (await storage.exists(runFiles.success(version.folder), signal)) {
    throw new BatchScorerError('E_RUN_EXISTS', `${where} exists already, finished: its rows are in the table; choose another --run-id`);
  }
  await checkRunFolder(storage, version.folder, version.runId, signal);
  const parsed = manifestSchema.safeParse(recorded.manifest);
  const errors = parsed.success ? parsed.data.outputs.find((o) => o.file === 'errors.jsonl') : undefined;
  if (!parsed.success || !errors || parsed.data.patches?.runId !== patched.runId || parsed.data.folder !== where) {
    throw new RunFolderError(
      `the manifest ${formatTableName(rescore.target.runsTable)} records for run ${version.runId} is not one of this release's rescores of ${where}`,
    );
  }
  await checkListedFile(storage, version.folder, errors, signal);
  await storage.write(runFiles.describe(version.folder), await storage.readText(runFiles.describe(patched.folder), signal), { signal });
  await writeRunFile(storage, runFiles.manifest(version.folder), parsed.data, { pretty: true, signal });
  await storage.write(runFiles.success(version.folder), '', { signal });
  await removeWorkFilesByName(storage, version.folder);
  return parsed.data;
}

/**
 * The advice on a version that the patched run has already: patch that version (its rows are in
 * the table), or, its run folder unfinished (`finished` false; undefined: not known), finish it
 * first by the same rescore under its run id.
 */
function alreadyPatched(patchedId: string, table: string, patcher: PatchingRun, finished?: boolean): BatchScorerError {
  const folder = patcher.folder ?? '';
  const out = folder.endsWith(`/${patcher.runId}`) ? shellWord(folder.slice(0, -patcher.runId.length - 1)) : '<out>';
  const finish = `batch-scorer rescore ${shellWord(patchedId)} --out ${out} --run-id ${shellWord(patcher.runId)}`;
  const patch = `batch-scorer rescore ${shellWord(patcher.runId)} --out ${out}`;
  const next =
    finished === false
      ? `its run folder ${folder} did not finish: finish it with ${finish} (nothing is sent or published again), then patch it (${patch})`
      : `patch that version instead (${patch})${finished === undefined ? `, once its run folder is finished (${finish} finishes it)` : ''}`;
  return new BatchScorerError(
    'E_RUN_CONFLICT',
    `run ${patchedId} was patched already by run ${patcher.runId}, published into ${table} at ${patcher.publishedAt}: the rows it scored are in the table, and sending them again would put them in twice; ${next}`,
  );
}
