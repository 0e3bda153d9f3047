// Where a benchmark ran: Node and V8 versions, CPU, cores, load, date — printed above every result.

import os from 'node:os';

export interface MachineInfo {
  readonly node: string;
  readonly v8: string;
  readonly cpu: string;
  readonly cores: number;
  readonly platform: string;
  /** 1-minute load average when the run started: other work on the machine skews the figures. */
  readonly load: number;
  readonly date: string;
}

export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  return {
    node: process.version,
    v8: process.versions.v8,
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    platform: `${process.platform}-${process.arch}`,
    load: os.loadavg()[0] ?? 0,
    date: new Date().toISOString(),
  };
}

/** Two readable lines describing the machine. */
export function formatMachine(m: MachineInfo): string {
  return `Node ${m.node} (V8 ${m.v8}) on ${m.platform}, ${m.cpu} × ${m.cores} cores\n${m.date}, load average ${m.load.toFixed(2)}`;
}

/** A plain text table: the first row is the header; columns after the first are right-aligned. */
export function formatTable(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  const line = (r: readonly string[]): string => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ');
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

/** The median of `xs` (the mean of the middle two for an even count). */
export function median(xs: readonly number[]): number {
  const s = xs.toSorted((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
