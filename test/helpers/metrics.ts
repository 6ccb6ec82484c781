import { spawn } from 'node:child_process';
import { once } from 'node:events';

/** A Prometheus text exposition's samples by series, `name{label="v",...}` exactly as written. */
export function parseSamples(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    samples.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return samples;
}

/** A sample's value; a missing series fails the test with its name rather than reading as 0. */
export function sample(samples: Map<string, number>, series: string): number {
  const value = samples.get(series);
  if (value === undefined) throw new Error(`no sample ${series} in the scrape`);
  return value;
}

/** `promtool check metrics` (Debian's prometheus package) over an exposition: its exit code and what it printed. */
export async function promtoolCheck(text: string): Promise<{ code: number | null; output: string }> {
  const child = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  child.stdin.end(text);
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, output };
}

/** A metric labelled by `outcome` alone, as `{ outcome: value }`. */
export function byOutcome(samples: Map<string, number>, metric: string): Record<string, number> {
  const values: Record<string, number> = {};
  for (const [series, value] of samples) {
    const m = new RegExp(`^${metric}\\{outcome="([^"]*)"\\}$`).exec(series);
    if (m) values[m[1]] = value;
  }
  return values;
}
