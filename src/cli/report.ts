// How `canopy replay` prints its findings: a short table for people, one JSON object for pipelines,
// and a progress bar on a terminal for long files.

import type { VerifyReport, WhatIfReport } from '../record/index.js';

/** A progress bar on stderr (only when it is a terminal); `done()` clears it. */
export function progress(first: number | null, last: number | null, enabled: boolean): { tick(t: number): void; done(): void } {
  const stream = process.stderr;
  if (!enabled || !stream.isTTY || first === null || last === null || last <= first) return { tick() {}, done() {} };
  let shown = -1;
  return {
    tick(t) {
      const pct = Math.floor(((t - first) / (last - first)) * 100);
      if (pct === shown) return;
      shown = pct;
      const width = 30;
      const full = Math.round((pct / 100) * width);
      stream.write(`\r[${'#'.repeat(full)}${' '.repeat(width - full)}] ${String(pct).padStart(3)}%  tick ${t} of ${last}`);
    },
    done() {
      if (shown >= 0) stream.write('\r\u001b[2K');
    },
  };
}

/** The exact replay's verdict, for people. */
export function formatVerify(file: string, r: VerifyReport): string {
  const lines: string[] = [];
  const range = r.firstTick === null ? 'no ticks' : `ticks ${r.firstTick}–${r.lastTick}`;
  if (r.identical) lines.push(`identical: ${r.frames} decisions frames of ${r.ticks} ticks (${range}) match ${file} byte for byte`);
  else {
    const d = r.difference!;
    lines.push(`DIFFERENT at tick ${d.tick} (${r.frames} frames compared):`);
    lines.push(`  recorded: ${JSON.stringify(d.recorded)}`);
    lines.push(`  replayed: ${JSON.stringify(d.replayed)}`);
  }
  if (r.truncated !== null) lines.push(`note: the recording stops early (${r.truncated}); replayed up to its last complete block`);
  if (r.agentsAtStart > 0) {
    lines.push(`note: recording started on a live session that already had ${r.agentsAtStart} agents; their spawns and earlier inputs are not in it, so their decisions cannot be reproduced (start recording with hello.record or CANOPY_RECORD=all for an exact replay)`);
  }
  return lines.join('\n');
}

/** The what-if report as a short table. */
export function formatWhatIf(r: WhatIfReport): string {
  const s = r.summary;
  const lines: string[] = [];
  lines.push(`what-if over ${r.ticks} ticks, ${r.agents} agents; trees changed: ${r.treesChanged.length === 0 ? 'none' : r.treesChanged.join(', ')}`);
  lines.push(`agents whose decisions change: ${s.agentsAffected} (on unchanged trees: ${s.agentsAffectedOnUnchangedTrees}); ticks differing: ${s.ticksDiffering}`);
  if (r.changes.length > 0) {
    lines.push('');
    lines.push(table(
      ['agent', 'label', 'tree', 'first tick', 'node', 'recorded → changed'],
      r.changes.map((c) => [
        String(c.id),
        c.label,
        c.tree + (c.treeChanged ? '' : ' (unchanged)'),
        String(c.firstTick),
        c.divergence === null ? '-' : `${c.divergence.names} (${c.divergence.path})`,
        c.divergence === null ? '-' : `${c.divergence.recorded} → ${c.divergence.changed}`,
      ]),
    ));
  }
  const names = Object.keys(s.actions).toSorted();
  if (names.length > 0) {
    lines.push('');
    lines.push(table(['action', 'added', 'removed', 'changed args'], names.map((n) => [n, String(s.actions[n]!.added), String(s.actions[n]!.removed), String(s.actions[n]!.changed)])));
  }
  lines.push('');
  lines.push(`cancels added ${s.cancels.added}, removed ${s.cancels.removed}`);
  lines.push(`results dropped (their action was not issued by the changed trees): ${s.droppedResults}; results for unknown seqs: ${s.unknownResults}; new actions left running without a result: ${s.unansweredActions}`);
  if (r.truncated !== null) lines.push(`note: the recording stops early (${r.truncated})`);
  return lines.join('\n');
}

function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, k) => Math.max(h.length, ...rows.map((r) => r[k]!.length)));
  const line = (cells: string[]) => cells.map((c, k) => c.padEnd(widths[k]!)).join('  ').trimEnd();
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}
