import { describe, expect, it } from 'vitest';
import { escapeHtml, html, jsonScript } from '../../src/http/html.js';
import { throughputSeries, type PageManifest, type PredictionProfile, type RunListPage, type RunPageView } from '../../src/http/run-page-data.js';
import { stateBadge } from '../../src/http/page-format.js';
import { CHARTS_ELEMENT_ID, renderMessage, type ChartSpec, type PageContext } from '../../src/http/page-layout.js';
import { renderRunList } from '../../src/http/run-list-html.js';
import { renderRunPage } from '../../src/http/run-view-html.js';
import { comparisonSummary, type Comparison } from '../../src/scoring/model-comparison.js';
import type { RunStatus } from '../../src/queue/producer.js';

const ctx: PageContext = {
  prefix: '/ui',
  queues: '/ui/',
  assets: { css: '/ui/assets/run-pages.css?v=1', chart: '/ui/assets/chart.js?v=1', script: '/ui/assets/run-page.js?v=1', icon: '/ui/assets/favicon.svg?v=1' },
};
const HOSTILE = '<script>alert(1)</script>';
const ATTRIBUTE_BREAK = '"><img src=x onerror=alert(1)>';

function status(over: Partial<RunStatus> = {}): RunStatus {
  return {
    runId: 'r1',
    state: 'succeeded',
    progress: { rowsDone: 1000, rowsTotal: 1000, rowsQuarantined: 2, segmentsDone: 2, segmentsTotal: 2, rowsPerSecond: 500, etaSeconds: 0 },
    attempts: 1,
    folder: '/tmp/out/r1',
    input: '/tmp/in.csv',
    model: 'mindsdb/home_rentals_model',
    out: '/tmp/out',
    options: {},
    priority: 'normal',
    enqueuedAt: '2024-05-01T10:00:00.000Z',
    finishedAt: '2024-05-01T10:00:02.000Z',
    ...over,
  };
}

const summary = (lo: number, hi: number) => ({
  count: 10,
  min: lo,
  max: hi,
  mean: (lo + hi) / 2,
  quantiles: [
    { p: 0.5, value: (lo + hi) / 2 },
    { p: 0.99, value: hi },
  ],
  histogram: [
    { lo, hi: (lo + hi) / 2, count: 4 },
    { lo: (lo + hi) / 2, hi, count: 6 },
  ],
});

function profile(column = 'rental_price'): PredictionProfile {
  return {
    relativeAccuracy: 0.01,
    targets: [
      {
        target: column,
        column,
        kind: 'numeric',
        count: 10,
        nulls: 0,
        numeric: summary(100, 5000),
        classes: null,
        otherClasses: 0,
        confidence: summary(0.5, 1),
      },
      {
        target: 'location',
        column: 'location',
        kind: 'categorical',
        count: 10,
        nulls: 1,
        numeric: null,
        classes: [
          { value: 'great', count: 6 },
          { value: 'good', count: 3 },
        ],
        otherClasses: 0,
        confidence: summary(0.2, 0.9),
      },
    ],
  };
}

function manifest(p: PredictionProfile | undefined): PageManifest {
  return {
    runId: 'r1',
    folder: '/tmp/out/r1',
    state: 'succeeded',
    trigger: null,
    startedAt: '2024-05-01T10:00:00.000Z',
    finishedAt: '2024-05-01T10:00:02.000Z',
    durationMs: 2000,
    tool: { name: 'batch-scorer', version: '0.2.0' },
    input: { location: '/tmp/in.csv', etag: null, size: 10, mtime: null, sha256: null, rows: 1000, format: 'csv', gzip: false },
    inputs: [],
    model: {
      requested: 'mindsdb/home_rentals_model',
      project: 'mindsdb',
      name: 'home_rentals_model',
      requestedVersion: null,
      resolvedVersion: 3,
      status: 'complete',
      rowIdEchoed: true,
    },
    service: 'http://127.0.0.1:47334',
    options: {},
    counts: {
      rowsIn: 1000,
      rowsScored: 998,
      rowsQuarantined: 2,
      requests: 2,
      retries: 0,
      splits: 0,
      intervalViolations: 0,
      unechoedRows: 0,
      connectionsOpened: 2,
      segments: 2,
    },
    outputs: [{ file: 'predictions.csv', location: '/tmp/out/r1/predictions.csv', rows: 998, bytes: 12345, sha256: 'ab'.repeat(32) }],
    timings: { planMs: 120, scoreMs: 3000, assembleMs: 80 },
    concurrency: { asked: 4, settled: 4 },
    drift: null,
    warnings: [],
    profile: p ?? null,
  };
}

function view(over: Partial<RunPageView> = {}): RunPageView {
  const s = over.status ?? status();
  return {
    status: s,
    ...(s.progress ? { progress: s.progress } : {}),
    segments: [
      { index: 0, state: 'done', rows: 500, quarantined: 2 },
      { index: 1, state: 'done', rows: 500, quarantined: 0 },
    ],
    throughput: [
      { seconds: 1, rowsPerSecond: 400 },
      { seconds: 2, rowsPerSecond: 600 },
    ],
    manifest: manifest(profile()),
    quarantined: undefined,
    problems: [],
    ...over,
  };
}

/** A page without the whitespace between tags (the templates are formatted for reading). */
const squash = (page: string) => page.replace(/>\s+</g, '><');
/** The runs as the list's only page. */
const listOf = (runs: RunStatus[]): RunListPage => ({ runs, older: false });

/** The chart specs a page embeds for its script. */
function charts(page: string): ChartSpec[] {
  const m = new RegExp(`<script type="application/json" id="${CHARTS_ELEMENT_ID}">(.*?)</script>`, 's').exec(page);
  return m ? (JSON.parse(m[1]) as ChartSpec[]) : [];
}

describe('html templates', () => {
  it('escape every interpolated value, in text and in attributes, but not nested templates', () => {
    expect(html`<a title="${ATTRIBUTE_BREAK}">${HOSTILE}</a>`.text).toBe(
      '<a title="&quot;&gt;&lt;img src=x onerror=alert(1)&gt;">&lt;script&gt;alert(1)&lt;/script&gt;</a>',
    );
    expect(html`<p>${html`<b>${'&'}</b>`}${[1, '<', null, false]}</p>`.text).toBe('<p><b>&amp;</b>1&lt;</p>');
    expect(escapeHtml(`'`)).toBe('&#39;');
  });

  it('embed JSON no value can break out of', () => {
    const out = jsonScript('x', { name: `</script>${HOSTILE}\u2028` }).text;
    expect(out.match(/<\/script>/g)).toHaveLength(1);
    expect(out).not.toContain('<script>alert');
    const json = /<script type="application\/json" id="x">(.*)<\/script>/s.exec(out)![1];
    expect(JSON.parse(json)).toEqual({ name: `</script>${HOSTILE}\u2028` });
  });
});

describe('run pages', () => {
  it('show hostile run ids, inputs, columns and quarantined rows as text', () => {
    const hostile = status({ runId: HOSTILE, input: ATTRIBUTE_BREAK, model: HOSTILE, failedReason: HOSTILE, state: 'failed' });
    const page = renderRunPage(
      ctx,
      view({
        status: hostile,
        manifest: manifest(profile(HOSTILE)),
        quarantined: { rows: [{ row: 7, line: 8, input: { [HOSTILE]: ATTRIBUTE_BREAK }, status: 400, title: HOSTILE, detail: HOSTILE }], from: 'errors.jsonl' },
        problems: [HOSTILE],
      }),
    );
    expect(page).not.toContain('<script>alert');
    expect(page).not.toContain('<img');
    expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    // Our own scripts only: the chart data, Chart.js and the page script.
    expect(page.match(/<script/g)).toHaveLength(3);
    expect(charts(page).map((c) => c.label)).toContain(HOSTILE);
    expect(page).toContain(`href="/ui/runs/${encodeURIComponent(HOSTILE)}/files/predictions.csv"`);

    const list = renderRunList(ctx, listOf([hostile]));
    expect(list).not.toContain('<script>alert');
    expect(list).not.toContain('<img');
    expect(list).toContain(`href="/ui/runs/${encodeURIComponent(HOSTILE)}"`);
    expect(renderMessage(ctx, 'No such run', HOSTILE)).not.toContain('<script>alert');
  });

  it('show the drift from the baseline run: columns by PSI, moved ones marked, skipped ones with why, who accepted it', () => {
    const column = (c: string, of: 'prediction' | 'input', psi: number, level: 'ok' | 'warn' | 'fail', rows: [number, number]) => ({
      of,
      column: c,
      psi,
      jsDistance: psi / 4,
      level,
      bins: [
        { hi: 10, baseline: rows[0] - 1, current: rows[1] - 2 },
        { lo: 10, baseline: 1, current: 2 },
      ],
    });
    const drift: NonNullable<PageManifest['drift']> = {
      baseline: { runId: 'base/1', finishedAt: '2024-04-30T10:00:00.000Z', chosen: 'named' },
      thresholds: { warn: 0.1, fail: 0.25 },
      level: 'fail',
      moved: ['sqft', HOSTILE],
      columns: [
        column('rental_price', 'prediction', 0.01234, 'ok', [12_345, 1_000_001]),
        column('sqft', 'input', 1.23456, 'fail', [5, 6]),
        column(HOSTILE, 'input', 0.2, 'warn', [7, 8]),
      ],
      skipped: [{ column: 'notes', why: 'categorical in the baseline, numeric now' }],
    };
    const accepted = { by: HOSTILE, at: '2024-05-01T11:00:00.000Z', error: { code: 'E_DRIFT', message: 'drifted' } };
    const page = squash(renderRunPage(ctx, view({ manifest: { ...manifest(profile()), drift, accepted } })));
    const section = /<section class="card" id="drift">(.*?)<\/section>/s.exec(page)![1];
    expect(section).toContain('<h2>Drift <span class="badge badge-drift-fail">fail</span></h2>');
    expect(section).toContain('<a href="/ui/runs/base%2F1">base/1</a>');
    expect(section).toContain('<dd>0.100 / 0.250</dd>');
    const rows = [
      ...section.matchAll(
        /<tr class="(moved)?"><td><code>(.*?)<\/code><\/td><td>(\w+)<\/td><td class="num">(.*?)<\/td><td class="num">(.*?)<\/td><td>(.*?)<\/td><td class="num">(.*?)<\/td>/g,
      ),
    ];
    expect(rows.map((r) => r.slice(1))).toEqual([
      ['moved', 'sqft', 'input', '1.235', '0.309', '<span class="badge badge-drift-fail">fail</span>', '5 / 6'],
      ['moved', '&lt;script&gt;alert(1)&lt;/script&gt;', 'input', '0.200', '0.050', '<span class="badge badge-drift-warn">warn</span>', '7 / 8'],
      [undefined, 'rental_price', 'prediction', '0.012', '0.003', '<span class="badge badge-drift-ok">ok</span>', '12,345 / 1,000,001'],
    ]);
    expect(section).toContain('<li><code>notes</code>: categorical in the baseline, numeric now</li>');
    expect(section).toMatch(
      /<dd id="drift-accepted">by &lt;script&gt;alert\(1\)&lt;\/script&gt;, <time datetime="2024-05-01T11:00:00.000Z">.*?\(it was held on E_DRIFT\)/,
    );
    // No inline script or style (the pages' CSP forbids both).
    expect(section).not.toMatch(/<script|style=/);
    // A run without a baseline has no drift section.
    expect(renderRunPage(ctx, view())).not.toContain('id="drift"');
  });

  it("show a run's priority on its page, and in the list only when it is not normal", () => {
    const high = status({ runId: 'urgent', priority: 'high' });
    expect(squash(renderRunPage(ctx, view({ status: high })))).toContain('<dt>Priority</dt><dd id="priority">high</dd>');
    expect(squash(renderRunPage(ctx, view()))).toContain('<dd id="priority">normal</dd>');
    const list = squash(renderRunList(ctx, listOf([high, status({ runId: 'usual' }), status({ runId: 'later', priority: 'low' })])));
    expect(list.match(/<span class="muted priority" title="priority">(\w+)<\/span>/g)).toEqual([
      '<span class="muted priority" title="priority">high</span>',
      '<span class="muted priority" title="priority">low</span>',
    ]);
  });

  it('give each state its badge, and an unknown state a neutral one', () => {
    for (const state of ['queued', 'running', 'cancelling', 'succeeded', 'failed', 'cancelled', 'expired', 'held']) {
      expect(stateBadge(state).text).toBe(`<span class="badge badge-${state}">${state}</span>`);
    }
    expect(stateBadge('paused').text).toBe('<span class="badge badge-unknown">paused</span>');
    const list = renderRunList(ctx, listOf([status({ runId: 'a', state: 'running' }), status({ runId: 'b', state: 'failed' })]));
    expect(list).toContain('<span class="badge badge-running">running</span>');
    expect(list).toContain('<span class="badge badge-failed">failed</span>');
  });

  it('draw one chart per target and one per confidence, plus throughput', () => {
    const page = squash(renderRunPage(ctx, view()));
    const specs = charts(page);
    expect(specs.map((c) => c.canvas).sort()).toEqual([
      'chart-confidence-0',
      'chart-confidence-1',
      'chart-prediction-0',
      'chart-prediction-1',
      'chart-throughput',
    ]);
    for (const spec of specs) expect(page).toContain(`<canvas id="${spec.canvas}"`);
    const numeric = specs.find((c) => c.canvas === 'chart-prediction-0')!;
    expect(numeric).toMatchObject({ kind: 'bars', values: [4, 6], labels: ['100 – 2,550', '2,550 – 5,000'], contiguous: true });
    expect(specs.find((c) => c.canvas === 'chart-prediction-1')).toMatchObject({ kind: 'bars', labels: ['great', 'good'], values: [6, 3] });
    expect(specs.find((c) => c.canvas === 'chart-throughput')).toMatchObject({
      kind: 'line',
      points: [
        { x: 0, y: 400 },
        { x: 1, y: 400 },
        { x: 2, y: 600 },
      ],
    });
    // The statistics table: quantiles by name.
    expect(page).toMatch(/<th>p50<\/th><td class="num">2,550<\/td><td class="num">0.75<\/td>/);
  });

  it('say there is no profile for an older run, and draw no prediction chart', () => {
    const page = renderRunPage(ctx, view({ manifest: manifest(undefined) }));
    expect(page).toContain('no prediction profile');
    expect(charts(page).map((c) => c.canvas)).toEqual(['chart-throughput']);
  });

  it('refresh a live run page, a cancelling one too, not a finished one', () => {
    const active = status({ state: 'running', finishedAt: undefined });
    expect(renderRunPage(ctx, view({ status: active, manifest: undefined }))).toContain('<meta http-equiv="refresh" content="5"');
    // Its jobs are still stopping: it becomes cancelled within seconds.
    const cancelling = status({ state: 'cancelling', finishedAt: undefined });
    expect(renderRunPage(ctx, view({ status: cancelling, manifest: undefined }))).toContain('<meta http-equiv="refresh" content="5"');
    expect(renderRunList(ctx, listOf([cancelling]))).toContain('<meta http-equiv="refresh" content="5"');
    expect(renderRunPage(ctx, view())).not.toContain('http-equiv="refresh"');
    expect(renderRunPage(ctx, view({ status: status({ state: 'cancelled' }), manifest: undefined }))).not.toContain('http-equiv="refresh"');
  });

  it('show segment cells by state, active ones with their worker', () => {
    const page = squash(
      renderRunPage(
        ctx,
        view({
          segments: [
            { index: 0, state: 'done', rows: 500, quarantined: 0 },
            { index: 1, state: 'active', rows: 120, quarantined: 0, worker: 'host-a:42' },
            { index: 2, state: 'failed', rows: 0, quarantined: 0, reason: 'E_BAD_ROWS' },
            { index: 3, state: 'waiting', rows: 0, quarantined: 0 },
          ],
        }),
      ),
    );
    expect(page.match(/data-state="(\w+)"/g)).toEqual(['data-state="done"', 'data-state="active"', 'data-state="failed"', 'data-state="waiting"']);
    expect(page).toMatch(
      /<li class="cell cell-active" data-state="active" title="[^"]*worker host-a:42[^"]*"><span class="index">1<\/span><span class="detail">host-a:42<\/span>/,
    );
  });
});

describe('the comparison with another model on the run page', () => {
  /** 2,000 rows compared, 100 differing: a numeric target with an interval, 20 rows kept; a class target with 2 rows kept. */
  function comparison(): Comparison {
    const price = Array.from({ length: 20 }, (_, k) => ({ row: 20 * (k + 1), input: `${k},2,${HOSTILE}`, main: 1000 + k, other: 1100 + k, difference: 100 }));
    return {
      model: 'mindsdb/home_rentals_model.2',
      other: `mindsdb/${HOSTILE}.1`,
      unanswered: 3,
      targets: [
        {
          target: 'rental_price',
          compared: 2000,
          agreed: 1900,
          agreement: 0.95,
          difference: summary(0, 300),
          minShift: summary(0, 30),
          maxShift: summary(0, 40),
          rows: [{ row: 7, input: 'x'.repeat(900), main: 2000.125, other: 1800, difference: -200.125 }, ...price],
        },
        {
          target: 'location',
          compared: 1997,
          agreed: 1995,
          agreement: 1995 / 1997,
          difference: null,
          minShift: null,
          maxShift: null,
          rows: [
            { row: 4, input: ATTRIBUTE_BREAK, main: 'great', other: HOSTILE },
            { row: 9, input: 'b', main: 'good', other: 'poor' },
          ],
        },
      ],
    };
  }
  const withComparison = (c: Comparison, file: RunPageView['comparison']) =>
    view({ manifest: { ...manifest(profile()), comparison: comparisonSummary(c) }, comparison: file });
  const section = (page: string) => /<section class="card" id="comparison">(.*?)<\/section>/s.exec(squash(page))?.[1];
  /** A side-by-side table's rows, their cells' inner HTML. */
  const sideBySide = (part: string, i: number) =>
    [...(new RegExp(`<table class="comparison-rows" id="comparison-rows-${i}">(.*?)</table>`, 's').exec(part)?.[1] ?? '').matchAll(/<tr>(.*?)<\/tr>/g)]
      .slice(1)
      .map((m) => [...m[1].matchAll(/<td[^>]*>(.*?)<\/td>/g)].map((c) => c[1]));

  it('show per target the agreement with its counts, the differences charted with their quantiles, and the differing rows side by side', () => {
    const page = renderRunPage(ctx, withComparison(comparison(), comparison()));
    const part = section(page)!;
    expect(part).toContain('<h2>Comparison with mindsdb/&lt;script&gt;alert(1)&lt;/script&gt;.1</h2>');
    expect(part).toContain('<dd id="agreement-0">95.00% (1,900 of 2,000)</dd>');
    expect(part).toContain('<dd id="agreement-1">99.90% (1,995 of 1,997)</dd>');
    expect(part).toMatch(/<dd id="comparison-unanswered">3 <span class="muted">/);
    expect(part).toContain('<a href="/ui/runs/r1/files/comparison.json" download>comparison.json</a>');
    // The differences' histogram, as the profile's are drawn; none for classes.
    const difference = charts(page).find((c) => c.canvas === 'chart-difference-0');
    expect(difference).toMatchObject({ kind: 'bars', values: [4, 6], labels: ['0 – 150', '150 – 300'], contiguous: true, logarithmic: true });
    expect(charts(page).some((c) => c.canvas === 'chart-difference-1')).toBe(false);
    expect(part).toContain('<canvas id="chart-difference-0"');
    // Quantiles of the differences and of both ends' shifts.
    expect(part).toContain('<th class="num">difference</th><th class="num">min shift</th><th class="num">max shift</th>');
    expect(part).toContain('<th>p50</th><td class="num">150</td><td class="num">15</td><td class="num">20</td>');

    const numeric = sideBySide(part, 0);
    expect(numeric).toHaveLength(21);
    expect(numeric[0]).toEqual([
      '7',
      `<code title="${'x'.repeat(900)}">${'x'.repeat(900)}</code>`,
      '2,000.125',
      '1,800',
      '-200.125 <span class="muted">(-10.01%)</span>',
    ]);
    expect(numeric[1]).toEqual([
      '20',
      '<code title="0,2,&lt;script&gt;alert(1)&lt;/script&gt;">0,2,&lt;script&gt;alert(1)&lt;/script&gt;</code>',
      '1,000',
      '1,100',
      '+100 <span class="muted">(+10%)</span>',
    ]);
    // Classes: no difference column.
    expect(sideBySide(part, 1)).toEqual([
      [
        '4',
        '<code title="&quot;&gt;&lt;img src=x onerror=alert(1)&gt;">&quot;&gt;&lt;img src=x onerror=alert(1)&gt;</code>',
        'great',
        '&lt;script&gt;alert(1)&lt;/script&gt;',
      ],
      ['9', '<code title="b">b</code>', 'good', 'poor'],
    ]);
    expect(page).not.toContain('<script>alert');
    expect(page).not.toContain('<img');
    expect(part).not.toMatch(/<script|style=/);
  });

  it('say why the rows are not shown when comparison.json was not read, and show no section without a comparison', () => {
    const part = section(renderRunPage(ctx, withComparison(comparison(), { unread: 'comparison.json takes 2000000 bytes' })))!;
    expect(part).toContain('<dd id="agreement-0">95.00% (1,900 of 2,000)</dd>');
    expect(part.match(/<p class="notice">Not shown: comparison.json takes 2000000 bytes<\/p>/g)).toHaveLength(2);
    expect(part).not.toContain('comparison-rows');
    expect(section(renderRunPage(ctx, withComparison(comparison(), undefined)))).toContain('Not shown: comparison.json could not be read (see above).');
    expect(section(renderRunPage(ctx, view()))).toBeUndefined();
  });
});

describe('provenance on the run pages', () => {
  const schedule = { kind: 'schedule', pipeline: 'nightly-rentals', fireTime: '2026-11-23T01:00:00.000Z', cron: '0 2 * * *', tz: 'Europe/Paris' } as const;
  const object = { location: 's3://inbox/rentals/a b.csv', etag: '9b2cf535f27731c974343645a3985328', versionId: 'v-42', size: 2048 };
  const event = { kind: 'event', pipeline: 'rentals-inbox', object, eventName: 's3:ObjectCreated:Put', eventTime: '2026-11-23T09:30:00.000Z' } as const;
  const poll = {
    kind: 'poll',
    pipeline: 'rentals-inbox',
    object: { location: '/data/in/x.csv', etag: '2048-1700000000000' },
    foundAt: '2026-11-23T09:31:00.000Z',
  } as const;
  /** The facts of a run page's "Started by" card, by id. */
  const facts = (page: string) => Object.fromEntries([...squash(page).matchAll(/<dd id="trigger-([\w-]+)">(.*?)<\/dd>/g)].map((m) => [m[1], m[2]]));

  it("list what started each run, its pipeline linking to that pipeline's page", () => {
    const list = squash(
      renderRunList(
        ctx,
        listOf([
          status({ runId: 's', trigger: schedule, pipeline: schedule.pipeline }),
          status({ runId: 'e', trigger: event, pipeline: event.pipeline }),
          status({ runId: 'c', trigger: { kind: 'cli', command: 'enqueue' } }),
          status({ runId: 'a', trigger: { kind: 'api' } }),
          status({ runId: 'old' }),
        ]),
      ),
    );
    expect(list).toContain('<th>Started by</th>');
    const cells = [...list.matchAll(/<td><span (?:class="muted" )?title="([^"]*)">(.*?)<\/span><\/td>/g)].map((m) => [m[1], m[2]]);
    expect(cells).toEqual([
      ['schedule nightly-rentals (2026-11-23T01:00:00.000Z)', 'schedule <a href="/ui/pipelines/nightly-rentals">nightly-rentals</a>'],
      ['event rentals-inbox (s3:ObjectCreated:Put s3://inbox/rentals/a b.csv)', 'event <a href="/ui/pipelines/rentals-inbox">rentals-inbox</a>'],
      ['cli (enqueue)', 'cli enqueue'],
      ['api (POST /runs)', 'api'],
      ['not recorded', '–'],
    ]);
  });

  it('filter by pipeline beside the state: each state link keeps the pipeline, and the pipeline pill drops it', () => {
    const list = squash(renderRunList(ctx, listOf([status({ trigger: event, pipeline: event.pipeline })]), { state: 'failed', pipeline: 'rentals-inbox' }));
    expect(list).toContain('<h1>Runs of pipeline <span class="run-id">rentals-inbox</span></h1>');
    expect(list).toContain('<title>Runs of rentals-inbox · batch-scorer</title>');
    expect(list).toContain('<a class="pill" href="/ui/runs?pipeline=rentals-inbox">all</a>');
    expect(list).toContain('<a class="pill current" href="/ui/runs?state=failed&amp;pipeline=rentals-inbox">failed</a>');
    expect(list).toMatch(/<a class="pill current" id="pipeline-filter" href="\/ui\/runs\?state=failed" [^>]*>pipeline rentals-inbox ×<\/a>/);
    expect(renderRunList(ctx, listOf([]), { pipeline: 'rentals-inbox' })).toContain('No  runs of pipeline rentals-inbox on the queue.');
    expect(renderRunList(ctx, listOf([]), { state: 'failed' })).not.toContain('id="pipeline-filter"');
  });

  it("show a schedule's fire time, cron and time zone", () => {
    const page = renderRunPage(ctx, view({ status: status({ trigger: schedule, pipeline: schedule.pipeline }) }));
    expect(facts(page)).toEqual({
      kind: 'schedule <span class="muted">(a schedule)</span>',
      pipeline: '<a href="/ui/runs?pipeline=nightly-rentals">nightly-rentals</a>',
      'fire-time': '<time datetime="2026-11-23T01:00:00.000Z">2026-11-23 01:00:00 UTC</time>',
      cron: '<code>0 2 * * *</code>',
      tz: 'Europe/Paris',
    });
  });

  it('show the object version an event or a poll found, and the event', () => {
    expect(facts(renderRunPage(ctx, view({ status: status({ trigger: event, pipeline: event.pipeline }) })))).toEqual({
      kind: 'event <span class="muted">(an S3 event notification)</span>',
      pipeline: '<a href="/ui/runs?pipeline=rentals-inbox">rentals-inbox</a>',
      event: 's3:ObjectCreated:Put',
      'event-time': '<time datetime="2026-11-23T09:30:00.000Z">2026-11-23 09:30:00 UTC</time>',
      location: '<code class="wrap">s3://inbox/rentals/a b.csv</code>',
      etag: '<code>9b2cf535f27731c974343645a3985328</code>',
      version: '<code>v-42</code>',
      size: '2.0 KiB',
    });
    // A poll of a local folder: no version id, no size.
    expect(facts(renderRunPage(ctx, view({ status: status({ trigger: poll, pipeline: poll.pipeline }) })))).toEqual({
      kind: 'poll <span class="muted">(watch, polling the storage)</span>',
      pipeline: '<a href="/ui/runs?pipeline=rentals-inbox">rentals-inbox</a>',
      'found-at': '<time datetime="2026-11-23T09:31:00.000Z">2026-11-23 09:31:00 UTC</time>',
      location: '<code class="wrap">/data/in/x.csv</code>',
      etag: '<code>2048-1700000000000</code>',
    });
    expect(facts(renderRunPage(ctx, view({ status: status({ trigger: { kind: 'cli', command: 'score' } }) })))).toEqual({
      kind: 'cli <span class="muted">(the command line)</span>',
      command: '<code>batch-scorer score</code>',
    });
    expect(renderRunPage(ctx, view())).toContain('Not recorded: the run was enqueued by an earlier release');
  });

  it('show hostile trigger values as text', () => {
    const hostileEvent = {
      kind: 'event',
      pipeline: HOSTILE,
      object: { location: `s3://inbox/${HOSTILE}`, etag: ATTRIBUTE_BREAK, versionId: HOSTILE },
      eventName: ATTRIBUTE_BREAK,
    } as const;
    const s = status({ trigger: hostileEvent, pipeline: HOSTILE });
    for (const page of [renderRunPage(ctx, view({ status: s })), renderRunList(ctx, listOf([s]), { pipeline: HOSTILE })]) {
      expect(page).not.toContain('<script>alert');
      expect(page).not.toContain('<img');
      expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
      expect(page).toContain(`href="/ui/runs?${new URLSearchParams({ pipeline: HOSTILE }).toString()}"`);
    }
  });
});

describe('throughputSeries', () => {
  it('gives rows/s between samples, skipping samples too close together', () => {
    const samples = [
      { t: 10_000, rowsDone: 0 },
      { t: 12_000, rowsDone: 1000 },
      { t: 14_000, rowsDone: 3000 },
      { t: 14_200, rowsDone: 3100 },
    ];
    // The final sample, 200 ms after one, replaces it: the last rate spans 12 s to 14.2 s.
    expect(throughputSeries(samples)).toEqual([
      { seconds: 2, rowsPerSecond: 500 },
      { seconds: 4.2, rowsPerSecond: 955 },
    ]);
    expect(throughputSeries(samples.slice(0, 1))).toEqual([]);
  });

  it('keeps at most 300 points of a long history', () => {
    const samples = Array.from({ length: 3600 }, (_, i) => ({ t: i * 2000, rowsDone: i * 100 }));
    const series = throughputSeries(samples);
    expect(series.length).toBeLessThanOrEqual(301);
    expect(series.length).toBeGreaterThan(250);
    expect(new Set(series.map((p) => p.rowsPerSecond))).toEqual(new Set([50]));
  });
});
