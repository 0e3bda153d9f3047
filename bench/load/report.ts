// The load generator's end-of-run tables: one column per run, one row per figure; the probes of a
// capacity search; the 1-vs-N worker comparison.

import { formatTable } from '../lib/machine.js';
import type { CapacityResult } from './capacity.js';
import { fmtRate, type RunResult } from './run.js';

const ms = (n: number): string => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2));
const mb = (bytesPerSec: number): string => `${(bytesPerSec / 2 ** 20).toFixed(2)} MB/s`;

/** A short name for a run's column. */
export function runLabel(r: RunResult): string {
  return `${r.mode}${r.workers === null ? '' : `, ${r.workers} worker${r.workers === 1 ? '' : 's'}`}`;
}

/** The figures of each run, side by side. */
export function resultsTable(results: readonly RunResult[]): string {
  const row = (label: string, cell: (r: RunResult) => string): string[] => [label, ...results.map(cell)];
  const lockstep = results.some((r) => r.mode === 'lockstep');
  const fixed = results.some((r) => r.mode === 'fixed');
  const rows: string[][] = [
    ['', ...results.map(runLabel)],
    row('load', (r) => `${r.sessions} × ${fmtRate(r.agents / r.sessions)} agents @ ${r.hz} Hz, ${r.seconds.toFixed(0)} s`),
    ...(results.some((r) => r.lod !== undefined)
      ? [row('level of detail: mix / rows sent', (r) => (r.lod === undefined ? 'off' : `${r.lod.mix} / ${r.lod.rows === 'due' ? 'when due' : 'all'}, ${(100 * r.lod.rowFraction).toFixed(1)} % of agents per tick`))]
      : []),
    row('agent-ticks/s achieved / offered', (r) => `${fmtRate(r.achievedAgentTicksPerSec)} / ${fmtRate(r.offeredAgentTicksPerSec)}`),
    row('decisions frames/s achieved / offered', (r) => `${r.achievedDecisionsPerSec.toFixed(0)} / ${r.offeredDecisionsPerSec.toFixed(0)}`),
    row('actions / cancels / done per s', (r) => `${fmtRate(r.actionsPerSec)} / ${fmtRate(r.cancelsPerSec)} / ${fmtRate(r.donePerSec)}`),
  ];
  if (lockstep) {
    rows.push(row('latency p50 / p99 / p99.9 / max ms', (r) => (r.lockstepLatencyMs === null ? '-' : `${ms(r.latencyMs.p50)} / ${ms(r.latencyMs.p99)} / ${ms(r.latencyMs.p999)} / ${ms(r.latencyMs.max)}`)));
    rows.push(row('  from hand-off to the socket p50 / p99 ms', (r) => (r.fromSendMs === null ? '-' : `${ms(r.fromSendMs.p50)} / ${ms(r.fromSendMs.p99)}`)));
    rows.push(row('snapshots: one message / staged / main thread', (r) => (r.snapshotPaths === null ? '-' : `${r.snapshotPaths.oneMessage} / ${r.snapshotPaths.staged} / ${r.snapshotPaths.mainThread}`)));
  }
  if (fixed) {
    rows.push(
      row('tick lateness p50 / p99 / max≤ ms', (r) => (r.tickLatenessMs === null ? '-' : `${ms(r.tickLatenessMs.p50)} / ${ms(r.tickLatenessMs.p99)} / ${r.tickLatenessMs.max === Infinity ? '>1000' : ms(r.tickLatenessMs.max)}`)),
      row('ticks starting within 10 ms', (r) => (r.tickLatenessMs === null ? '-' : `${(100 * r.tickLatenessMs.within10ms).toFixed(2)} %`)),
      row('decisions spacing p50 / p99 / max ms', (r) => (r.decisionSpacingMs === null ? '-' : `${ms(r.decisionSpacingMs.p50)} / ${ms(r.decisionSpacingMs.p99)} / ${ms(r.decisionSpacingMs.max)}`)),
      row('staleness p50 / p99 ms', (r) => (r.stalenessMs === null ? '-' : `${ms(r.stalenessMs.p50)} / ${ms(r.stalenessMs.p99)}`)),
      row('snapshots: read by a worker / main thread', (r) => (r.fixedSnapshotPaths === null ? '-' : `${r.fixedSnapshotPaths.worker} / ${r.fixedSnapshotPaths.mainThread}`)),
    );
  }
  rows.push(
    row('missed ticks', (r) => String(r.missedTicks)),
    row('tick duration mean / p99 ms', (r) => `${ms(r.tickDurationMs.mean)} / ${ms(r.tickDurationMs.p99)}`),
    row('  to a worker p99: waiting / working / returning ms', (r) => (r.workerTickP99Ms === null ? '-' : `${ms(r.workerTickP99Ms.waiting)} / ${ms(r.workerTickP99Ms.working)} / ${ms(r.workerTickP99Ms.returning)}`)),
    row('service CPU (cores) / RSS', (r) => `${r.server.cpuCores.toFixed(2)} / ${r.server.rssMB.toFixed(0)} MB`),
    row('  main thread / workers / GC+JIT', (r) => {
      const t = r.server.threads;
      if (t === null) return '-';
      // Node before 22 names no thread: workers cannot be told from V8's helpers.
      if (t.workerCores.length === 0) return `${t.mainCores.toFixed(2)} / (workers + GC + JIT) ${t.otherCores.toFixed(2)}`;
      return `${t.mainCores.toFixed(2)} / ${t.workerCores.map((c) => c.toFixed(2)).join(' + ')} / ${t.otherCores.toFixed(2)}`;
    }),
    row('  page faults/s main / workers', (r) => (r.server.threads === null ? '-' : `${r.server.threads.mainFaultsPerSec} / ${r.server.threads.workerFaultsPerSec}`)),
    row('service CPU per agent-tick µs', (r) => r.server.cpuUsPerAgentTick.toFixed(3)),
    row('main thread share / Amdahl bound on 16 cores', (r) => (r.server.mainShare === null ? '-' : `${(100 * r.server.mainShare).toFixed(1)} % / ${r.server.amdahl16!.toFixed(1)}×`)),
    row('generator CPU (cores) / share', (r) => `${r.generator.cpuCores.toFixed(2)} / ${(100 * r.generator.cpuShare).toFixed(0)} %`),
    row('machine speed: reference work ms', (r) => r.referenceWorkMs.toFixed(0)),
    row('other programs CPU (cores)', (r) => (r.otherCpuCores === null ? '-' : r.otherCpuCores.toFixed(2))),
    row('generator lag p99 / max ms', (r) => `${ms(r.generator.sendLagMs.p99)} / ${ms(r.generator.sendLagMs.max)}`),
    row('generator work per game tick p50 / p99 ms', (r) => `${ms(r.generator.tickWorkMs.p50)} / ${ms(r.generator.tickWorkMs.p99)}`),
    row('bytes/s to / from service', (r) => `${mb(r.bytesPerSec.toService)} / ${mb(r.bytesPerSec.fromService)}`),
    row('errors', (r) => (r.errors === 0 ? '0' : `${r.errors} (${r.errorDetail.service} service, ${r.errorDetail.agent} agent, ${r.errorDetail.lostTicks} lost ticks)`)),
    row(`verdict`, (r) => (r.ok ? `ok (p99 ≤ ${ms(r.budgetMs)} ms)` : 'FAIL')),
  );
  return formatTable(rows);
}

/** Why runs failed, one line each. */
export function failureLines(results: readonly RunResult[]): string[] {
  const lines: string[] = [];
  for (const r of results) {
    if (r.failures.length > 0) lines.push(`${runLabel(r)}: ${r.failures.join('; ')}`);
    if (r.errorDetail.sample !== null) lines.push(`${runLabel(r)}: first error: ${r.errorDetail.sample}`);
  }
  return lines;
}

/** The probes of a capacity search. */
export function capacityTable(search: CapacityResult<RunResult>): string {
  return formatTable([
    ['agents', 'verdict', 'p99 ms', 'missed', 'achieved', 'service CPU', 'generator CPU', 'other CPU', 'ref ms', 'why'],
    ...search.probes.map((p) => [
      String(p.agents),
      p.ok ? 'ok' : 'fail',
      ms(p.detail.latencyMs.p99),
      String(p.detail.missedTicks),
      fmtRate(p.detail.achievedAgentTicksPerSec),
      p.detail.server.cpuCores.toFixed(2),
      p.detail.generator.cpuCores.toFixed(2),
      p.detail.otherCpuCores === null ? '-' : p.detail.otherCpuCores.toFixed(2),
      p.detail.referenceWorkMs.toFixed(0),
      p.detail.failures.join('; ').slice(0, 90),
    ]),
  ]);
}

/** The capacity line: "capacity: 41,000 agents (fails at 43,000)". */
export function capacityLine(search: CapacityResult<unknown>): string {
  const failed = search.failedAt === undefined ? '' : `, fails at ${search.failedAt.toLocaleString('en-US')}`;
  return `capacity: ${search.atLeast ? 'at least ' : ''}${search.capacity.toLocaleString('en-US')} agents${failed}`;
}
