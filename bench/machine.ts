/** The machine a bench ran on, for the results' header and the plot's title. */
import { readFileSync } from 'node:fs';
import os from 'node:os';

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  os: string;
  date: string;
}

export function describeMachine(): Machine {
  let cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  try {
    // /proc/cpuinfo's model name, as the brief of the numbers asks; os.cpus() says the same on Linux.
    cpu = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1].trim() ?? cpu;
  } catch {
    // Not Linux: os.cpus()'s model.
  }
  return {
    cpu,
    cores: os.cpus().length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    date: new Date().toISOString().slice(0, 10),
  };
}
