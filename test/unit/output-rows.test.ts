import { gzipSync } from 'node:zlib';
import iconv from 'iconv-lite';
import { describe, expect, it } from 'vitest';
import type { BatchScorerError } from '../../src/errors.js';
import type { OutputFile } from '../../src/scoring/manifest.js';
import { readOutputRows } from '../../src/scoring/output-rows.js';
import { joinLocation, parseLocation } from '../../src/storage/location.js';
import { MemoryStorage } from '../helpers/memory-storage.js';

const folder = parseLocation('s3://bucket/runs/r1');

/** An output as the manifest lists it (only its name and rows are read). */
const listed = (file: string, rows: number): OutputFile => ({ file, location: '', rows, bytes: 0, sha256: '' });

async function rowsOf(storage: MemoryStorage, outputs: OutputFile[], encoding = 'utf-8'): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  for await (const chunk of readOutputRows(storage, folder, outputs, encoding)) rows.push(...chunk);
  return rows;
}

describe('readOutputRows', () => {
  it("reads a run's outputs in order: CSV in its writer's dialect, gzipped JSON Lines, another encoding", async () => {
    const storage = new MemoryStorage();
    await storage.write(joinLocation(folder, 'predictions-00000.csv'), 'id,note,price\n1,"a, ""b""",10.5\n2,,\n');
    await storage.write(joinLocation(folder, 'predictions-00001.jsonl.gz'), gzipSync('{"id":3,"price":null}\n{"id":4,"price":7}\n'));
    expect(await rowsOf(storage, [listed('predictions-00000.csv', 2), listed('predictions-00001.jsonl.gz', 2)])).toEqual([
      { id: '1', note: 'a, "b"', price: '10.5' },
      { id: '2', note: '', price: '' },
      { id: 3, price: null },
      { id: 4, price: 7 },
    ]);
    await storage.write(joinLocation(folder, 'predictions', 'x.csv'), iconv.encode('city,price\nMontréal,1\n', 'latin1'));
    expect(await rowsOf(storage, [listed('predictions/x.csv', 1)], 'latin1')).toEqual([{ city: 'Montréal', price: '1' }]);
  });

  it('refuses a missing file, other rows than the manifest says, and a name outside the folder (E_RUN_STATE)', async () => {
    const storage = new MemoryStorage();
    const refusal = async (outputs: OutputFile[]) => {
      const error = await rowsOf(storage, outputs).then(
        () => undefined,
        (err: unknown) => err as BatchScorerError,
      );
      return [error?.code, error?.message];
    };
    expect(await refusal([listed('predictions.csv', 0)])).toEqual(['E_RUN_STATE', expect.stringContaining('predictions.csv is missing')]);
    await storage.write(joinLocation(folder, 'predictions.jsonl'), '{"a":1}\n');
    expect(await refusal([listed('predictions.jsonl', 2)])).toEqual(['E_RUN_STATE', expect.stringContaining('has 1 rows where its manifest says 2')]);
    await storage.write(joinLocation(folder, 'predictions.csv'), 'a,b\n1\n');
    expect(await refusal([listed('predictions.csv', 1)])).toEqual(['E_RUN_STATE', expect.stringContaining('line 2 cannot be read')]);
    expect(await refusal([listed('../r2/predictions.csv', 1)])).toEqual(['E_RUN_STATE', expect.stringContaining('outside its folder')]);
  });
});
