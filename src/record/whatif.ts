// What-if: a recording's inputs run through the recorded trees and through changed trees side by side;
// the report says which agents decide differently, from which tick, where in the tree, and how the
// actions issued change. Results the changed trees never asked for cannot be known: they are dropped.

import type { Agent, AgentId, CompiledTree } from '../bt/index.js';
import type { TreeLibrary } from '../bt/library.js';
import { decode, type ActionResult, type DecisionsFields } from '../protocol/index.js';
import { loadCatalog } from '../service/pool/load.js';
import { Kind } from './format.js';
import { RecordingReader } from './reader.js';
import { ReplayRun, readTick } from './run.js';

/** Where the two runs of one agent first disagree in the tree (after the first differing tick). */
export interface Divergence {
  /** The node's JSON path in its tree file (`root.children[0]`). */
  readonly path: string;
  /** Names from the root down to the node (`guard > flee`), types where a node has no name. */
  readonly names: string;
  /** The node's status in the recorded run and in the changed run (`missing`: no such node there). */
  readonly recorded: string;
  readonly changed: string;
}

/** One agent whose decisions changed. */
export interface AgentChange {
  readonly id: AgentId;
  readonly label: string;
  readonly tree: string;
  /** True when the changed trees hold a different version of this agent's tree (or its subtrees). */
  readonly treeChanged: boolean;
  readonly firstTick: number;
  readonly divergence: Divergence | null;
  /** This agent's entries of that tick's decisions in each run. */
  readonly recordedDecisions: AgentDecisions;
  readonly changedDecisions: AgentDecisions;
  /** Ticks (in range) whose decisions differ for this agent. */
  readonly ticksDiffering: number;
}

/** One agent's share of a tick's decisions. */
export interface AgentDecisions {
  actions: Array<[number, string, unknown]>;
  cancels: number[];
  done: string[];
  errors: Array<[string, string]>;
}

/** The what-if report (`canopy replay --trees DIR --json` prints it). */
export interface WhatIfReport {
  readonly recording: string;
  readonly from: number | null;
  readonly to: number | null;
  readonly ticks: number;
  /** Agents seen (spawned) during the run. */
  readonly agents: number;
  /** Trees whose content differs between the recording and the changed trees. */
  readonly treesChanged: string[];
  readonly changes: AgentChange[];
  readonly summary: {
    readonly agentsAffected: number;
    /** Agents on unchanged trees whose decisions still changed (a studio gate: expect 0). */
    readonly agentsAffectedOnUnchangedTrees: number;
    readonly ticksDiffering: number;
    /** Per action name: issued by the changed trees only, by the recorded trees only, or with other args. */
    readonly actions: Record<string, { added: number; removed: number; changed: number }>;
    readonly cancels: { added: number; removed: number };
    /**
     * Recorded results whose action the changed run did not issue under that seq: not delivered to it.
     * (The changed run's own new actions get no results: they are left running.)
     */
    readonly droppedResults: number;
    /** Recorded results for seqs neither run had running (the agents ignore them, as the service did). */
    readonly unknownResults: number;
    /** Actions only the changed run issued: no result will ever come for them (left running). */
    readonly unansweredActions: number;
  };
  /** The recording stopped early (cut off): where. */
  readonly truncated: string | null;
}

/** Options of {@link whatIf}. */
export interface WhatIfOptions {
  readonly from?: number;
  readonly to?: number;
  /** Plugin folder for the recorded trees (the changed library brings its own catalog). */
  readonly plugins?: string;
  readonly onTick?: (tick: number) => void;
}

type Issued = Map<AgentId, Map<number, string>>;

/**
 * Runs the recording at `path` with its recorded trees and with `trees` (names missing from `trees` keep
 * their recorded definition) and reports what the change alters.
 */
export async function whatIf(path: string, trees: TreeLibrary, opts: WhatIfOptions = {}): Promise<WhatIfReport> {
  const reader = RecordingReader.open(path);
  const header = reader.header;
  const loaded = await loadCatalog(opts.plugins);
  if (!loaded.ok) throw new Error(loaded.error);
  const issued: { base: Issued; changed: Issued } = { base: new Map(), changed: new Map() };
  let dropped = 0;
  let unknown = 0;
  const base = new ReplayRun(header, loaded.catalog);
  const changed = new ReplayRun(header, trees.catalog, {
    override: trees,
    filter: (results) => {
      const kept: ActionResult[] = [];
      for (const r of results) {
        const b = issued.base.get(r[0])?.get(r[1]);
        const c = issued.changed.get(r[0])?.get(r[1]);
        if (b === undefined && c === undefined) {
          unknown++;
          kept.push(r);
        } else if (b === c) kept.push(r);
        else dropped++;
        issued.changed.get(r[0])?.delete(r[1]);
      }
      return kept;
    },
  });
  const treesChanged = header.trees === undefined ? [] : Object.keys(header.trees).filter((n) => base.library.get(n)?.hash !== changed.library.get(n)?.hash).toSorted();
  const inRange = (t: number) => (opts.from === undefined || t >= opts.from) && (opts.to === undefined || t <= opts.to);

  const changes = new Map<AgentId, AgentChange>();
  const actions: Record<string, { added: number; removed: number; changed: number }> = {};
  const cancels = { added: 0, removed: 0 };
  const seen = new Set<AgentId>();
  let ticks = 0;
  let ticksDiffering = 0;
  let unanswered = 0;

  for (const { kind, payload } of reader.records()) {
    if (kind === Kind.TICK) {
      const t = readTick(payload);
      if (opts.to !== undefined && t.tick > opts.to) break;
      const a = await base.tick(t);
      const b = await changed.tick(t);
      track(issued.base, a.decisions);
      track(issued.changed, b.decisions);
      opts.onTick?.(t.tick);
      if (!inRange(t.tick)) continue;
      ticks++;
      if (a.frame.equals(b.frame)) continue;
      ticksDiffering++;
      const ga = byAgent(a.decisions);
      const gb = byAgent(b.decisions);
      for (const id of new Set([...ga.keys(), ...gb.keys()])) {
        const da = ga.get(id) ?? emptyDecisions();
        const db = gb.get(id) ?? emptyDecisions();
        if (sameDecisions(da, db)) continue;
        unanswered += compareActions(da, db, actions);
        const ca = new Set(da.cancels);
        const cb = new Set(db.cancels);
        for (const s of cb) if (!ca.has(s)) cancels.added++;
        for (const s of ca) if (!cb.has(s)) cancels.removed++;
        const known = changes.get(id);
        if (known !== undefined) {
          (known as { ticksDiffering: number }).ticksDiffering++;
          continue;
        }
        const agentA = base.agent(id);
        const agentB = changed.agent(id);
        const tree = agentA?.tree.name ?? agentB?.tree.name ?? '';
        changes.set(id, {
          id,
          label: agentA?.label ?? agentB?.label ?? '',
          tree,
          treeChanged: treesChanged.includes(tree),
          firstTick: t.tick,
          divergence: diverge(agentA, agentB),
          recordedDecisions: da,
          changedDecisions: db,
          ticksDiffering: 1,
        });
      }
    } else if (kind === Kind.SPAWN) {
      for (const e of decode(payload) as Array<{ id: AgentId }>) seen.add(e.id);
      base.apply(kind, payload);
      changed.apply(kind, payload);
    } else if (kind !== Kind.DECISIONS && kind !== Kind.HEADER && kind !== Kind.END) {
      base.apply(kind, payload);
      changed.apply(kind, payload);
    }
  }
  const list = [...changes.values()].toSorted((x, y) => x.firstTick - y.firstTick || String(x.id).localeCompare(String(y.id)));
  return {
    recording: path,
    from: opts.from ?? null,
    to: opts.to ?? null,
    ticks,
    agents: seen.size,
    treesChanged,
    changes: list,
    summary: {
      agentsAffected: list.length,
      agentsAffectedOnUnchangedTrees: list.filter((c) => !c.treeChanged).length,
      ticksDiffering,
      actions,
      cancels,
      droppedResults: dropped,
      unknownResults: unknown,
      unansweredActions: unanswered,
    },
    truncated: reader.problem,
  };
}

/** Structural equality of one agent's decisions (no strings built: this runs for every agent of a differing tick). */
function sameDecisions(a: AgentDecisions, b: AgentDecisions): boolean {
  if (a.actions.length !== b.actions.length || a.cancels.length !== b.cancels.length || a.done.length !== b.done.length || a.errors.length !== b.errors.length) return false;
  for (let i = 0; i < a.actions.length; i++) {
    const x = a.actions[i]!;
    const y = b.actions[i]!;
    if (x[0] !== y[0] || x[1] !== y[1] || !deepEqual(x[2], y[2])) return false;
  }
  for (let i = 0; i < a.cancels.length; i++) if (a.cancels[i] !== b.cancels[i]) return false;
  for (let i = 0; i < a.done.length; i++) if (a.done[i] !== b.done[i]) return false;
  for (let i = 0; i < a.errors.length; i++) if (a.errors[i]![0] !== b.errors[i]![0] || a.errors[i]![1] !== b.errors[i]![1]) return false;
  return true;
}

function deepEqual(x: unknown, y: unknown): boolean {
  if (x === y) return true;
  if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null) return Number.isNaN(x) && Number.isNaN(y);
  if (Array.isArray(x) !== Array.isArray(y)) return false;
  const kx = Object.keys(x);
  const ky = Object.keys(y);
  if (kx.length !== ky.length) return false;
  for (const k of kx) if (!deepEqual((x as Record<string, unknown>)[k], (y as Record<string, unknown>)[k])) return false;
  return true;
}

function emptyDecisions(): AgentDecisions {
  return { actions: [], cancels: [], done: [], errors: [] };
}

function byAgent(d: DecisionsFields): Map<AgentId, AgentDecisions> {
  const out = new Map<AgentId, AgentDecisions>();
  const get = (id: AgentId): AgentDecisions => {
    let e = out.get(id);
    if (e === undefined) out.set(id, (e = emptyDecisions()));
    return e;
  };
  for (const [id, seq, name, args] of d.actions ?? []) get(id).actions.push([seq, name, args]);
  for (const [id, seq] of d.cancels ?? []) get(id).cancels.push(seq);
  for (const [id, status] of d.done ?? []) get(id).done.push(status);
  for (const [id, code, message] of d.errors ?? []) get(id).errors.push([code, message]);
  return out;
}

/** Remembers each run's actions by seq (name and args), so results can be matched to them. */
function track(issued: Issued, d: DecisionsFields): void {
  for (const [id, seq, name, args] of d.actions ?? []) {
    let m = issued.get(id);
    if (m === undefined) issued.set(id, (m = new Map()));
    m.set(seq, actionKey(name, args));
  }
  for (const [id, seq] of d.cancels ?? []) issued.get(id)?.delete(seq);
}

function actionKey(name: string, args: unknown): string {
  return `${name}\u0000${JSON.stringify(args ?? null)}`;
}

/** Counts added / removed / changed actions per name for one agent-tick; returns the actions only the changed run issued. */
function compareActions(a: AgentDecisions, b: AgentDecisions, out: Record<string, { added: number; removed: number; changed: number }>): number {
  const names = new Set([...a.actions.map((x) => x[1]), ...b.actions.map((x) => x[1])]);
  let onlyChanged = 0;
  for (const name of names) {
    const xa = a.actions.filter((x) => x[1] === name).map((x) => JSON.stringify(x[2] ?? null));
    const xb = b.actions.filter((x) => x[1] === name).map((x) => JSON.stringify(x[2] ?? null));
    const entry = (out[name] ??= { added: 0, removed: 0, changed: 0 });
    const paired = Math.min(xa.length, xb.length);
    for (let i = 0; i < paired; i++) if (xa[i] !== xb[i]) entry.changed++;
    entry.removed += xa.length - paired;
    entry.added += xb.length - paired;
    onlyChanged += xb.length - paired;
  }
  return onlyChanged;
}

/** The first node, in tree order, whose status differs between the two agents (matched by JSON path). */
function diverge(a: Agent | null, b: Agent | null): Divergence | null {
  if (a === null || b === null) return null;
  const ia = a.inspect();
  const ib = b.inspect();
  const statusB = new Map(ib.nodes.map((n) => [n.path, n.status]));
  for (const n of ia.nodes) {
    const sb = statusB.get(n.path);
    if (sb !== n.status) return { path: n.path, names: nodeNames(a.tree, n.index), recorded: n.status, changed: sb ?? 'missing' };
  }
  const statusA = new Map(ia.nodes.map((n) => [n.path, n.status]));
  for (const n of ib.nodes) {
    if (!statusA.has(n.path)) return { path: n.path, names: nodeNames(b.tree, n.index), recorded: 'missing', changed: n.status };
  }
  return null;
}

function nodeNames(tree: CompiledTree, index: number): string {
  const parts: string[] = [];
  for (let i = index; i >= 0; i = tree.nodes[i]!.parent) {
    const n = tree.nodes[i]!;
    parts.push(n.name ?? n.type);
    if (n.parent < 0 || n.parent === i) break;
  }
  return parts.toReversed().join(' > ');
}
