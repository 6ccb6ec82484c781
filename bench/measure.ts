/**
 * Runs one command as a child process and measures it: wall time, CPU seconds (user + sys) and
 * peak RSS.
 *
 * How CPU is measured: the command runs under bash, as a background job that bash waits for, and
 * bash's `times` builtin then prints the CPU its reaped children used (second line). That is the
 * kernel's own rusage of the child, exact to the millisecond and counting every thread (V8's GC
 * and libuv's pool included), where sampling /proc/<pid>/stat every 20 ms would miss whatever
 * the process burns in its last interval before exit. Bash runs nothing else, so its children's
 * time is the command's.
 *
 * How peak RSS is measured: bash writes the command's pid (the node process itself, not bash) on
 * fd 3 first; /proc/<pid>/status VmHWM (the kernel's high-water mark) is read every 20 ms and
 * the last value seen before exit is kept. VmHWM only grows, so the samples miss nothing but a
 * rise in the last 20 ms.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';

export interface Measured {
  wallSeconds: number;
  /** User + system CPU seconds of the command (and anything it waited for). */
  cpuSeconds: number;
  peakRssMiB: number;
  stdout: string;
}

// `"$@" 3>&-`: the command does not inherit the report pipe, so the pipe closes when bash exits.
const WRAPPER = '"$@" 3>&- & pid=$!; echo "pid $pid" >&3; wait $pid; code=$?; times >&3; exit $code';
const SAMPLE_MS = 20;

/** Runs `command` (argv, first the program) with these extra environment variables; throws when it exits non-zero. */
export async function measure(command: string[], env: Record<string, string> = {}): Promise<Measured> {
  const started = process.hrtime.bigint();
  const child = spawn('bash', ['-c', WRAPPER, 'bench-measure', ...command], {
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let stdout = '';
  let stderrTail = '';
  let report = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  // Passed through (warnings are worth seeing) and its tail kept for the error of a failed command.
  child.stderr!.on('data', (d: Buffer) => {
    process.stderr.write(d);
    stderrTail = (stderrTail + d.toString()).slice(-2000);
  });
  (child.stdio[3] as NodeJS.ReadableStream).on('data', (d: Buffer) => (report += d.toString()));

  let peakKiB = 0;
  const timer = setInterval(() => {
    const pid = /^pid (\d+)/.exec(report)?.[1];
    if (!pid) return;
    void readFile(`/proc/${pid}/status`, 'utf8').then(
      (status) => (peakKiB = Math.max(peakKiB, Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0))),
      () => undefined, // The process exited between two samples.
    );
  }, SAMPLE_MS);
  let code: number | null;
  try {
    [code] = (await once(child, 'close')) as [number | null];
  } finally {
    clearInterval(timer);
  }
  const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (code !== 0) throw new Error(`${command.slice(0, 4).join(' ')} ... exited ${code}: ${stderrTail.trim().split('\n').slice(-3).join(' | ')}`);
  return { wallSeconds, cpuSeconds: childrenCpu(report), peakRssMiB: Math.round(peakKiB / 102.4) / 10, stdout };
}

/** The children's user + sys seconds from `times` output: its second line, e.g. `0m1.234s 0m0.056s`. */
function childrenCpu(report: string): number {
  const lines = report.trim().split('\n');
  const children = lines[lines.length - 1];
  const parts = [...children.matchAll(/(\d+)m([\d.]+)s/g)];
  if (parts.length !== 2) throw new Error(`unexpected output of bash times: ${JSON.stringify(report)}`);
  return parts.reduce((sum, [, min, sec]) => sum + Number(min) * 60 + Number(sec), 0);
}

/** The median of some numbers (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
