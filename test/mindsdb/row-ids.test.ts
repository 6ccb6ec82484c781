import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import { parseCsv, rentalsText, tempDir } from '../helpers/scoring.js';
import { connectMindsdb } from './mindsdb-server.js';
import { predictExchanges, useRecordingProxy } from './recording-proxy.js';
import { scoreCli } from './score-cli.js';
import { expectSqlPredictions, RENTAL_PRICE_MEMBERS, sqlPredictions } from './sql-predictions.js';

const conn = connectMindsdb(inject('mindsdbUrl'));
const ROWS = 5_000;
const ID = '__mindsdb_row_id';
let tmp: Awaited<ReturnType<typeof tempDir>>;
const proxy = useRecordingProxy(conn.url);

beforeAll(async () => {
  tmp = await tempDir();
});
afterAll(() => tmp.cleanup());

describe('row ids on the wire, against a real MindsDB', () => {
  it('sends every row with its __mindsdb_row_id, and every answer row carries the id of the row it answers', async () => {
    const csv = rentalsText(ROWS);
    await writeFile(join(tmp.dir, 'rentals.csv'), csv);
    // Batches of an odd size, several in flight: answers come back in any order.
    const res = await scoreCli({
      input: join(tmp.dir, 'rentals.csv'),
      model: 'mindsdb/home_rentals_model',
      service: proxy.url,
      out: join(tmp.dir, 'out'),
      runId: 'ids',
      flags: ['--batch-size', '333', '--concurrency', '8'],
    });
    expect(res.code, res.stderr).toBe(0);
    const [probe, ...batches] = predictExchanges(proxy.exchanges);

    // Planning's probe: one row carrying each candidate member; the server echoes only its own.
    expect(probe.sent).toHaveLength(1);
    expect(probe.sent[0]).toMatchObject({ [ID]: 0, __service_row_id: 0 });
    expect(probe.answered).toEqual([{ ...Object.fromEntries(RENTAL_PRICE_MEMBERS.map((m) => [m, expect.any(Number)])), [ID]: 0 }]);

    expect(batches).toHaveLength(Math.ceil(ROWS / 333));
    const rows = parseCsv(csv);
    for (const batch of batches) {
      expect(batch.status).toBe(200);
      expect(batch.answered).toHaveLength(batch.sent.length);
      // Only the id member the server echoes, nothing else of the probe's.
      expect(batch.sent.every((row) => !('__service_row_id' in row))).toBe(true);
      // Each answer row carries the id of the row at its place: only the engine's members and the id, no input echoed.
      expect(batch.answered!.map((a) => a[ID])).toEqual(batch.sent.map((s) => s[ID]));
      expect(batch.answered!.every((a) => Object.keys(a).toSorted().join() === [...RENTAL_PRICE_MEMBERS, ID].toSorted().join())).toBe(true);
      // The id names the input row whose values were sent (its 0-based place in the file).
      for (const sent of batch.sent) expect(sent.sqft).toBe(Number(rows[sent[ID] as number].sqft));
    }
    const ids = batches.flatMap((b) => b.sent.map((s) => s[ID] as number));
    expect(ids.toSorted((a, b) => a - b)).toEqual(Array.from({ length: ROWS }, (_, i) => i));

    const manifest = JSON.parse(await readFile(join(res.folder, 'manifest.json'), 'utf8')) as Manifest;
    expect(manifest.model).toMatchObject({ rowIdMember: ID, rowIdEchoed: true });
    expect(manifest.counts).toMatchObject({ requests: batches.length, retries: 0, unechoedRows: 0, rowsScored: ROWS });
    const scored = parseCsv(await readFile(join(res.folder, 'predictions.csv'), 'utf8'));
    expectSqlPredictions(scored, await sqlPredictions(conn, 'home_rentals_model', csv, 'listing_id'), 'listing_id');
  });
});
