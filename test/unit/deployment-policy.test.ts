import { mkdir, mkdtemp, readdir, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkInput,
  checkOutput,
  checkRead,
  checkRun,
  checkService,
  openSettings,
  serviceBase,
  storageGuard,
  type DeploymentPolicy,
} from '../../src/config/deployment-policy.js';
import { tokenFor } from '../../src/config/service-tokens.js';
import { loadSettings } from '../../src/config/settings.js';
import { BatchScorerError } from '../../src/errors.js';
import { guardedStorage } from '../../src/storage/guarded-storage.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import { rejection, thrown } from '../helpers/rejection.js';

/** The refusal a check gives, checked to be E_NOT_ALLOWED. */
async function refusal(check: Promise<unknown>): Promise<BatchScorerError> {
  const err = await rejection(check, BatchScorerError);
  expect(err.code).toBe('E_NOT_ALLOWED');
  return err;
}

const at = (text: string) => parseLocation(text);

/**
 * A folder tree: `root/` (the root, with `in/data.csv` and `in/link.csv`, a link to `private/secret.csv`,
 * and `escape`, a link to `private/`), `root2/` (a sibling whose name starts like the root's),
 * `private/secret.csv`, and `alias`, a link to `root/`.
 */
let base = '';
beforeAll(async () => {
  // Real path: tmpdir may itself be reached through a link (macOS /var), which the checks resolve.
  base = await realpath(await mkdtemp(join(tmpdir(), 'policy-unit-')));
  await mkdir(join(base, 'root', 'in'), { recursive: true });
  await mkdir(join(base, 'root2'));
  await mkdir(join(base, 'private'));
  await writeFile(join(base, 'root', 'in', 'data.csv'), 'a,b\n1,2\n');
  await writeFile(join(base, 'private', 'secret.csv'), 'password\nhunter2\n');
  await symlink(join(base, 'private', 'secret.csv'), join(base, 'root', 'in', 'link.csv'));
  await symlink(join(base, 'private'), join(base, 'root', 'escape'));
  await symlink(join(base, 'root'), join(base, 'alias'));
});
afterAll(() => rm(base, { recursive: true, force: true }));

describe('local roots', () => {
  const policy = (): DeploymentPolicy => ({ inputRoots: [at(join(base, 'root'))], outputRoots: [at(join(base, 'root', 'out'))] });

  it('allow the root itself, what lies below it, and what does not exist yet below it', async () => {
    for (const path of ['root', 'root/', 'root/in/data.csv', 'root/in/', 'root/in/part-*.csv', 'root/not/yet/there.csv']) {
      await checkInput(policy(), at(join(base, path)));
    }
    await checkInput(policy(), at(`file://${join(base, 'root', 'in', 'data.csv')}`));
    await checkOutput(policy(), at(join(base, 'root', 'out', 'run-1', '_work', 'run.json')));
  });

  it('refuse a sibling whose name starts like the root, and what is above or beside it', async () => {
    for (const path of ['root2/x.csv', 'rootx', 'private/secret.csv', '']) {
      const err = await refusal(checkInput(policy(), at(join(base, path))));
      expect(err.message).toContain('is outside INPUT_ROOTS');
      expect(err.message).toContain(`use a location under ${join(base, 'root')}`);
    }
    // An input root is not an output root.
    await refusal(checkOutput(policy(), at(join(base, 'root', 'in', 'x.csv'))));
  });

  it('resolve `..` before comparing', async () => {
    for (const text of [
      join(base, 'root', '..', 'private', 'secret.csv'),
      `${join(base, 'root')}/in/../../private/secret.csv`,
      `file://${base}/root/../private/`,
    ]) {
      await refusal(checkInput(policy(), at(text)));
    }
    await checkInput(policy(), at(`${join(base, 'root')}/in/../in/data.csv`));
  });

  it('refuse a symbolic link inside a root that leads outside it, naming the link as the reason', async () => {
    for (const path of ['root/in/link.csv', 'root/escape/secret.csv', 'root/escape/', 'root/escape/new/file.csv']) {
      const err = await refusal(checkInput(policy(), at(join(base, path))));
      expect(err.message).toContain('leads outside INPUT_ROOTS through a symbolic link');
    }
  });

  it('resolve a root that is itself a link, so the same folder is allowed by either name', async () => {
    const viaAlias: DeploymentPolicy = { inputRoots: [at(join(base, 'alias'))] };
    await checkInput(viaAlias, at(join(base, 'root', 'in', 'data.csv')));
    await checkInput(viaAlias, at(join(base, 'alias', 'in', 'data.csv')));
    await refusal(checkInput(viaAlias, at(join(base, 'alias', 'in', 'link.csv'))));
  });

  it('never admit an S3 location under a local root, nor a local one under an S3 root', async () => {
    await refusal(checkInput(policy(), at('s3://root/in/data.csv')));
    await refusal(checkInput({ inputRoots: [at('s3://data/')] }, at(join(base, 'root', 'in', 'data.csv'))));
  });
});

describe('S3 roots', () => {
  const policy: DeploymentPolicy = { inputRoots: [at('s3://data/exports/'), at('s3://inbox')], outputRoots: [at('s3://results/runs')] };

  it('hold keys below the prefix at a / boundary, the prefix itself, and a whole bucket for a root without a key', async () => {
    for (const text of [
      's3://data/exports/a.csv',
      's3://data/exports/',
      's3://data/exports',
      's3://data/exports/2026/*.csv',
      's3://inbox/',
      's3://inbox/x/y.csv',
    ]) {
      await checkInput(policy, at(text));
    }
    await checkOutput(policy, at('s3://results/runs/run-1/manifest.json'));
  });

  it('refuse a key that merely starts like the prefix, another bucket, and the bucket above the prefix', async () => {
    for (const text of ['s3://data/exports2/a.csv', 's3://data/exportsx', 's3://data/', 's3://data2/exports/a.csv', 's3://results/runs/x.csv']) {
      await refusal(checkInput(policy, at(text)));
    }
    await refusal(checkOutput(policy, at('s3://results/runs10/run-1/')));
    await refusal(checkOutput(policy, at('s3://results/')));
  });

  it('refuse `.` and `..` in a key, which a gateway may resolve as a path', async () => {
    for (const text of ['s3://data/exports/../secrets/x.csv', 's3://inbox/./x.csv', 's3://inbox/a/..']) {
      const err = await refusal(checkInput(policy, at(text)));
      expect(err.message).toContain('has a "." or ".." in its key');
    }
    // Dots inside a name are only a name.
    await checkInput(policy, at('s3://data/exports/..hidden/a..b.csv'));
  });
});

describe('services', () => {
  const policy: DeploymentPolicy = { serviceUrls: ['http://127.0.0.1:47334', 'https://models.example/v1'] };

  it('are compared as scheme, host, port and path, whatever the case of the host, a default port or trailing slashes', () => {
    expect(serviceBase('HTTP://Models.Example:443/v1/')).toBe('http://models.example:443/v1');
    expect(serviceBase('https://models.example:443/v1//')).toBe('https://models.example/v1');
    for (const url of ['http://127.0.0.1:47334', 'http://127.0.0.1:47334/', 'https://MODELS.example/v1/', 'https://models.example:443/v1'])
      checkService(policy, url);
  });

  it('refuse another host, port, scheme or path, naming SERVICE_URLS', () => {
    for (const url of [
      'http://127.0.0.1:47335',
      'http://localhost:47334',
      'https://127.0.0.1:47334',
      'https://models.example/v2',
      'https://models.example',
      'http://models.example/v1',
    ]) {
      const err = thrown(() => checkService(policy, url), BatchScorerError);
      expect(err.code).toBe('E_NOT_ALLOWED');
      expect(err.message).toContain('is not allowed by SERVICE_URLS');
    }
  });
});

describe('a run', () => {
  const policy: DeploymentPolicy = { inputRoots: [at('s3://data/')], outputRoots: [at('s3://results/')], serviceUrls: ['http://sim:47334'] };

  it("is checked for its input, its output and the service it names; naming none is the worker's own", async () => {
    await checkRun(policy, { input: 's3://data/a.csv', out: 's3://results/' });
    await checkRun(policy, { input: 's3://data/a.csv', out: 's3://results/', service: 'http://sim:47334/' });
    await refusal(checkRun(policy, { input: 's3://data/a.csv', out: 's3://results/', service: 'http://other:47334' }));
    expect((await refusal(checkRun(policy, { input: 's3://results/a.csv', out: 's3://results/' }))).message).toContain('INPUT_ROOTS');
    expect((await refusal(checkRun(policy, { input: 's3://data/a.csv', out: 's3://data/' }))).message).toContain('OUTPUT_ROOTS');
  });

  it('is refused without echoing a long location or URL in full', async () => {
    const long = `s3://private/${'x'.repeat(50_000)}.csv`;
    const err = await refusal(checkRun(policy, { input: long, out: 's3://results/' }));
    expect(err.message.length).toBeLessThan(1000);
    expect(err.message).toMatch(/\.\.\. \d+ more bytes/);
    const url = `http://other/${'y'.repeat(50_000)}`;
    expect(thrown(() => checkService(policy, url), BatchScorerError).message.length).toBeLessThan(1000);
  });

  it('reads back from either list, and with a list unset anything goes', async () => {
    await checkRead(policy, at('s3://data/a.csv'));
    await checkRead(policy, at('s3://results/run-1/manifest.json'));
    expect((await refusal(checkRead(policy, at('s3://other/a.csv')))).message).toContain('INPUT_ROOTS or OUTPUT_ROOTS');
    const open: DeploymentPolicy = {};
    expect(openSettings(open)).toEqual(['INPUT_ROOTS', 'OUTPUT_ROOTS', 'SERVICE_URLS']);
    expect(openSettings(policy)).toEqual([]);
    await checkRun(open, { input: '/etc/passwd', out: '/', service: 'http://anywhere:1' });
    await checkRead({ inputRoots: [at('s3://data/')] }, at('/etc/passwd'));
  });
});

describe('databases to write rows to', () => {
  const noConfig = join(tmpdir(), 'batch-scorer-no-config-folder');
  const run = { input: 's3://results/a.csv', out: 's3://results/' };

  it('are the database URLs OUTPUT_ROOTS lists: only those (host, port and database) may take --out-database', async () => {
    const { policy } = loadSettings({ OUTPUT_ROOTS: 's3://results/, postgresql://writer@db.internal:5433/scores' }, noConfig);
    expect(policy.outputRoots).toEqual([at('s3://results/')]);
    expect(policy.outputDatabases).toEqual([{ host: 'db.internal', port: 5433, database: 'scores', user: 'writer' }]);
    // Another role on the same database is the same database.
    await checkRun(policy, { ...run, outDatabase: 'postgresql://other@db.internal:5433/scores' });
    const refused = await refusal(checkRun(policy, { ...run, outDatabase: 'postgresql://db.internal:5432/scores' }));
    expect(refused.message).toBe(
      '--out-database postgresql://db.internal:5432/scores is not allowed: OUTPUT_ROOTS lists postgresql://writer@db.internal:5433/scores; name one it lists, or add it to OUTPUT_ROOTS',
    );
  });

  it('are none when OUTPUT_ROOTS lists folders alone, and any when it is unset', async () => {
    const folders = loadSettings({ OUTPUT_ROOTS: 's3://results/' }, noConfig).policy;
    expect((await refusal(checkRun(folders, { ...run, outDatabase: 'postgresql://h/db' }))).message).toContain('OUTPUT_ROOTS lists no database');
    await checkRun({}, { ...run, outDatabase: 'postgresql://h/db' });
  });

  it('refuse a database URL with a password in OUTPUT_ROOTS, without showing it', () => {
    const err = thrown(() => loadSettings({ OUTPUT_ROOTS: 'postgresql://u:hunter2@h/db' }, noConfig), BatchScorerError);
    expect(err.code).toBe('E_CONFIG');
    expect(err.message).toMatch(/^OUTPUT_ROOTS: database URL postgresql:\/\/u@h\/db carries a password/);
    expect(err.message).not.toContain('hunter2');
  });
});

describe('the storage guard over real local storage', () => {
  it('refuses a listed link out of an input folder with INPUT_ROOTS alone, and one into the output roots', async () => {
    const listAll = async (policy: DeploymentPolicy, folder: string) => {
      const storage = guardedStorage(createStorage(), storageGuard(policy));
      const listed: string[] = [];
      const err = await refusal(
        (async () => {
          for await (const file of storage.list(at(folder))) listed.push(file.location.kind === 'file' ? file.location.path : '');
        })(),
      );
      storage.close();
      return { err, listed };
    };
    // Run folders may be anywhere without OUTPUT_ROOTS, so reads outside INPUT_ROOTS pass; a link found by listing does not.
    const inputsOnly = await listAll({ inputRoots: [at(join(base, 'root', 'in'))] }, join(base, 'root', 'in'));
    expect(inputsOnly.err.message).toMatch(/link\.csv, found in .*, leads outside that folder through a symbolic link/);
    expect(inputsOnly.listed).toEqual([join(base, 'root', 'in', 'data.csv')]);
    // Both lists admit private/ (as an output root), but a link in the input folder still may not lead there.
    const both = await listAll({ inputRoots: [at(join(base, 'root', 'in'))], outputRoots: [at(join(base, 'private'))] }, join(base, 'root', 'in'));
    expect(both.err.code).toBe('E_NOT_ALLOWED');
    expect(both.listed).toEqual([join(base, 'root', 'in', 'data.csv')]);
  });

  it('refuses a listed file that is a link out of the folder, reads and writes inside, and writes nothing outside', async () => {
    const policy: DeploymentPolicy = { inputRoots: [at(join(base, 'root', 'in'))], outputRoots: [at(join(base, 'root', 'out'))] };
    const storage = guardedStorage(createStorage(), storageGuard(policy));
    const listed: string[] = [];
    const err = await refusal(
      (async () => {
        for await (const file of storage.list(at(join(base, 'root', 'in')))) listed.push(file.location.kind === 'file' ? file.location.path : '');
      })(),
    );
    expect(err.message).toContain('link.csv');
    expect(listed).toEqual([join(base, 'root', 'in', 'data.csv')]);
    await refusal(storage.read(at(join(base, 'root', 'in', 'link.csv'))));
    await refusal(storage.readText(at(join(base, 'private', 'secret.csv'))));
    expect(await text(await storage.read(at(join(base, 'root', 'in', 'data.csv'))))).toBe('a,b\n1,2\n');

    await storage.write(at(join(base, 'root', 'out', 'r', 'x.txt')), 'ok');
    await refusal(storage.write(at(join(base, 'private', 'new', 'x.txt')), 'no'));
    await refusal(storage.write(at(join(base, 'root', 'in', 'data.csv')), 'no'));
    await refusal(storage.remove(at(join(base, 'private', 'secret.csv'))));
    await refusal(storage.removeFiles(at(join(base, 'private')), () => true));
    await refusal(storage.create(at(join(base, 'private', 'claim.json')), '{}'));
    await refusal(storage.whyUnwritable(at(join(base, 'private'))));
    expect((await readdir(join(base, 'private'))).sort()).toEqual(['secret.csv']);
    expect(await text(await storage.read(at(join(base, 'root', 'in', 'data.csv'))))).toBe('a,b\n1,2\n');
    storage.close();
  });
});

describe('the policy settings', () => {
  const noConfig = join(tmpdir(), 'batch-scorer-no-config-folder');
  const load = (env: NodeJS.ProcessEnv) => loadSettings(env, noConfig);
  const configError = (env: NodeJS.ProcessEnv) => {
    const err = thrown(() => load(env), BatchScorerError);
    expect(err.code).toBe('E_CONFIG');
    return err.message;
  };

  it('are read as comma-separated lists; unset or empty leaves everything allowed', () => {
    const { policy } = load({
      INPUT_ROOTS: ' /data/in , s3://data/ ,file:///srv/x',
      OUTPUT_ROOTS: 's3://results/',
      SERVICE_URLS: 'http://b:1/,http://c:2/v1',
      MODEL_SERVICE_URL: 'http://A:47334',
    });
    expect(policy).toEqual({
      inputRoots: [at('/data/in'), at('s3://data/'), at('/srv/x')],
      inputDatabases: [],
      outputRoots: [at('s3://results/')],
      // OUTPUT_ROOTS set but naming no database: --out-database may name none.
      outputDatabases: [],
      // The deployment's own service is always allowed.
      serviceUrls: ['http://a:47334', 'http://b:1', 'http://c:2/v1'],
    });
    expect(load({ INPUT_ROOTS: '', OUTPUT_ROOTS: ' ' }).policy).toEqual({});
  });

  it('list PostgreSQL databases apart: a database input is allowed when INPUT_ROOTS names its database, refused otherwise', async () => {
    const { policy } = load({ INPUT_ROOTS: '/data/in, postgresql://db.internal:5432/sales', OUTPUT_ROOTS: 's3://results/' });
    expect(policy).toMatchObject({
      inputRoots: [at('/data/in')],
      inputDatabases: [{ host: 'db.internal', port: 5432, database: 'sales' }],
      outputRoots: [at('s3://results/')],
    });
    // The user and sslmode aside, the same database is allowed.
    await checkRun(policy, { input: 'postgresql://analyst@DB.internal/sales?sslmode=require', out: 's3://results/' });
    const other = await refusal(checkRun(policy, { input: 'postgresql://analyst@db.internal:5432/hr', out: 's3://results/' }));
    expect(other.message).toBe(
      'input postgresql://analyst@db.internal:5432/hr is not allowed: INPUT_ROOTS lists postgresql://db.internal:5432/sales; read one it lists, or add it to INPUT_ROOTS',
    );
    // INPUT_ROOTS without databases allows none; unset, any.
    const none = load({ INPUT_ROOTS: '/data/in' }).policy;
    expect((await refusal(checkRun(none, { input: 'postgresql://db.internal/sales', out: '/tmp/x' }))).message).toMatch(/INPUT_ROOTS lists no database;/);
    await checkRun({}, { input: 'postgresql://db.internal/sales', out: '/tmp/x' });
    const withPassword = configError({ INPUT_ROOTS: 'postgresql://u:pa55word@db/sales' });
    expect(withPassword).toMatch(/^INPUT_ROOTS: database URL .* carries a password/);
    expect(withPassword).not.toContain('pa55word');
  });

  it('refuse a relative path, a glob, an empty entry and a service URL that cannot be one, naming the setting', () => {
    expect(configError({ INPUT_ROOTS: 'data/in' })).toMatch(/^INPUT_ROOTS: "data\/in" is not an absolute path: write \/absolute\/folder/);
    expect(configError({ OUTPUT_ROOTS: 's3://results/*/' })).toMatch(/^OUTPUT_ROOTS: "s3:\/\/results\/\*\/" is a glob/);
    expect(configError({ OUTPUT_ROOTS: 'gs://x/' })).toMatch(/^OUTPUT_ROOTS: .*unsupported scheme/);
    expect(configError({ INPUT_ROOTS: '/a,,/b' })).toMatch(/^INPUT_ROOTS has an empty entry/);
    const withPassword = configError({ SERVICE_URLS: 'http://b:1,http://u:s3cret@c:2' });
    expect(withPassword).toMatch(/^SERVICE_URLS entry 2 must not carry credentials/);
    expect(withPassword).not.toContain('s3cret');
    expect(configError({ MODEL_SERVICE_URL: 'ftp://x' })).toMatch(/^MODEL_SERVICE_URL must be an http\(s\) URL/);
  });
});

describe('service tokens', () => {
  const noConfig = join(tmpdir(), 'batch-scorer-no-config-folder');
  const env = { MODEL_SERVICE_URL: 'http://home:47334/v1', MODEL_SERVICE_TOKEN: 'home-token', SERVICE_URLS: 'http://b:1,https://c.example/v2' };

  it('give MODEL_SERVICE_TOKEN to the origin of MODEL_SERVICE_URL only, and another service its own SERVICE_TOKENS entry or nothing', () => {
    const { serviceTokens } = loadSettings({ ...env, SERVICE_TOKENS: 'https://c.example=c-token=with=equals' }, noConfig);
    expect(tokenFor(serviceTokens, 'http://home:47334/v1')).toBe('home-token');
    expect(tokenFor(serviceTokens, 'http://home:47334/other')).toBe('home-token');
    expect(tokenFor(serviceTokens, 'https://c.example:443/v2')).toBe('c-token=with=equals');
    for (const url of ['http://b:1', 'http://home:47335', 'https://home:47334', 'http://other-host', 'not a url'])
      expect(tokenFor(serviceTokens, url), url).toBeUndefined();
    // Without MODEL_SERVICE_URL, its default is the service the token goes to.
    expect(tokenFor(loadSettings({ MODEL_SERVICE_TOKEN: 't' }, noConfig).serviceTokens, 'http://127.0.0.1:47334')).toBe('t');
    expect(tokenFor(loadSettings({ MODEL_SERVICE_TOKEN: 't' }, noConfig).serviceTokens, 'http://other:47334')).toBeUndefined();
  });

  it('refuse an entry that is not <origin>=<token>, an origin no allowed service has, and a second token for an origin, never showing a token', () => {
    const refused = (tokens: string) => {
      const err = thrown(() => loadSettings({ ...env, SERVICE_TOKENS: tokens }, noConfig), BatchScorerError);
      expect(err.code).toBe('E_CONFIG');
      for (const secret of ['sekrit', 'home-token']) expect(err.message).not.toContain(secret);
      return err.message;
    };
    expect(refused('http://b:1=x,sekrit')).toMatch(/^SERVICE_TOKENS entry 2 is not <origin>=<token>/);
    expect(refused('http://b:1/path=sekrit')).toMatch(/^SERVICE_TOKENS entry 1 is not <origin>=<token>/);
    expect(refused('http://b:1=')).toMatch(/^SERVICE_TOKENS entry 1 is not <origin>=<token>/);
    expect(refused('http://other-host=sekrit')).toMatch(
      /^SERVICE_TOKENS entry 1 names http:\/\/other-host, which is neither .* add the service to SERVICE_URLS/,
    );
    expect(refused('http://home:47334=sekrit')).toMatch(/^SERVICE_TOKENS entry 1 names http:\/\/home:47334, which MODEL_SERVICE_TOKEN gives a token already/);
    expect(refused('http://b:1=sekrit,HTTP://B:1=sekrit')).toMatch(/^SERVICE_TOKENS entry 2 names http:\/\/b:1, which an earlier entry gives a token already/);
  });
});
