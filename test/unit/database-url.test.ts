import { describe, expect, it } from 'vitest';
import { formatDatabaseUrl, isDatabaseUrl, parseDatabaseUrl, sameDatabase } from '../../src/database/database-url.js';
import { formatTableName, parseTableName, quoteTable } from '../../src/database/sql-identifier.js';

describe('database URLs', () => {
  it('parses host, port, database, user and sslmode, and writes them back', () => {
    const db = parseDatabaseUrl('postgres://analyst@db.internal:6543/sales?sslmode=require');
    expect(db).toEqual({ host: 'db.internal', port: 6543, database: 'sales', user: 'analyst', sslmode: 'require' });
    expect(formatDatabaseUrl(db)).toBe('postgresql://analyst@db.internal:6543/sales?sslmode=require');
    expect(parseDatabaseUrl('postgresql://127.0.0.1/test')).toEqual({ host: '127.0.0.1', port: 5432, database: 'test' });
    expect(isDatabaseUrl('POSTGRESQL://h/db')).toBe(true);
    expect(isDatabaseUrl('s3://bucket/key')).toBe(false);
    expect(sameDatabase(parseDatabaseUrl('postgresql://a@H:5432/db'), parseDatabaseUrl('postgresql://b@h/db'))).toBe(true);
  });

  it('refuses a password without repeating it, and what it cannot use, naming what to do', () => {
    const refused = () => parseDatabaseUrl('postgresql://analyst:s3cr3t-pw@db:5432/sales');
    expect(refused).toThrow(/carries a password: remove it and set PGPASSWORD/);
    expect(refused).not.toThrow(/s3cr3t/);
    expect(() => parseDatabaseUrl('postgresql://db:5432/')).toThrow(/names no database/);
    expect(() => parseDatabaseUrl('postgresql://db/sales?options=-c%20x')).toThrow(/parameter 'options': only sslmode is taken/);
    expect(() => parseDatabaseUrl('postgresql://db/sales?sslmode=maybe')).toThrow(/sslmode must be one of/);
    expect(() => parseDatabaseUrl('mysql://db/sales')).toThrow(/is not a database URL/);
  });
});

describe('table names', () => {
  it('folds unquoted parts, keeps quoted ones, and puts a bare table in public', () => {
    expect(parseTableName('Rentals', '--table')).toEqual({ schema: 'public', table: 'rentals' });
    expect(parseTableName('scores.Out_2026', '--out-table')).toEqual({ schema: 'scores', table: 'out_2026' });
    expect(parseTableName('"Sales"."Q1 ""rows"""', '--table')).toEqual({ schema: 'Sales', table: 'Q1 "rows"' });
    expect(quoteTable({ schema: 'Sales', table: 'Q1 "rows"' })).toBe('"Sales"."Q1 ""rows"""');
    expect(formatTableName({ schema: 'public', table: 'rentals' })).toBe('public.rentals');
  });

  it('refuses what is not a name, naming the flag', () => {
    for (const text of ['', 'a.b.c', 'a;drop table x', 'a.', '"open', '1table', 'x'.repeat(64)]) {
      expect(() => parseTableName(text, '--out-table'), text).toThrow(/^--out-table: /);
    }
  });
});
