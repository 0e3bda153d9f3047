// One replay run: a recording's inputs applied to agents on this thread, ticked as the service ticked
// them, decisions encoded as the service encodes them. Replay, what-if and the inspector drive runs.
//
// It uses the service's InlinePool (not the bare engine): the pool's router and host are the exact code
// that applied these inputs in the service (slots, spawn order of decisions, row packing, result
// buffering), so reusing it is what makes the replayed frames byte-identical rather than merely similar.

import type { Agent, AgentId, NodeCatalog } from '../bt/index.js';
import { TreeLibrary, formatErrors } from '../bt/library.js';
import {
  decode,
  encodeDecisions,
  parseClientFrame,
  resultTuples,
  type ActionResult,
  type DecisionsFields,
  type Mode,
  type SnapshotMessage,
} from '../protocol/index.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAgentPool, type AgentPool } from '../service/pool/index.js';
import { InlinePool } from '../service/pool/inline.js';
import type { TreeLookup } from '../service/pool/host.js';
import { matchesDecisions } from './match.js';
import { Kind, type RecordingHeader, type SpawnRecord, type TickRecord, type TreeTable, type TreesReload } from './format.js';

const SESSION = 'replay';

/** Builds a library from a recording's tree table. @throws {Error} listing the validation errors */
export function libraryFromTable(table: TreeTable, catalog: NodeCatalog, override?: TreeLibrary): TreeLibrary {
  const defs: Record<string, unknown> = {};
  for (const [name, t] of Object.entries(table.trees)) defs[name] = table.definitions[t.def];
  if (override !== undefined) for (const name of override.names()) defs[name] = override.definition(name);
  const r = TreeLibrary.fromDefinitions(defs, { catalog });
  if (!r.ok) throw new Error(`the recorded trees do not load:\n${formatErrors(r.errors)}`);
  return r.library;
}

/** A tree lookup whose library can be replaced (a TREES record: the service reloaded its trees). */
class Trees implements TreeLookup {
  library: TreeLibrary;
  constructor(library: TreeLibrary) {
    this.library = library;
  }
  get(name: string) {
    return this.library.get(name);
  }
}

/** What one tick of a run produced. */
export class TickOutcome {
  readonly tick: number;
  readonly decisions: DecisionsFields;
  private encoded: Buffer | null = null;

  constructor(tick: number, decisions: DecisionsFields) {
    this.tick = tick;
    this.decisions = decisions;
  }

  /**
   * The frame as the service would send it (lockstep: always; fixed: only when it has content), encoded on
   * first use: exact replay proves most frames equal without encoding them (`matches`).
   */
  get frame(): Buffer {
    return (this.encoded ??= encodeDecisions(this.decisions));
  }

  /** True when `recorded` is byte for byte this tick's frame. */
  matches(recorded: Uint8Array): boolean {
    return matchesDecisions(recorded, this.decisions) || Buffer.from(recorded.buffer, recorded.byteOffset, recorded.byteLength).equals(this.frame);
  }
}

/** Decides, per result, whether it reaches this run's agents (what-if filters results the changed trees did not ask for). */
export type ResultFilter = (results: readonly ActionResult[]) => ActionResult[];

/** Applies records to agents on this thread. */
export class ReplayRun {
  readonly mode: Mode;
  readonly fields: readonly string[] | null;
  readonly pool: AgentPool;
  private readonly trees: Trees;
  /** Worker threads only: the folder their trees were written to. */
  private folder: string | null = null;
  private readonly catalog: NodeCatalog;
  /** Fixed: the library the user gave replaces the recorded trees for the whole run (what-if). */
  private readonly override: TreeLibrary | undefined;
  private readonly filter: ResultFilter | undefined;

  constructor(header: RecordingHeader, catalog: NodeCatalog, opts: { override?: TreeLibrary; filter?: ResultFilter; pool?: AgentPool; library?: TreeLibrary } = {}) {
    this.mode = header.mode;
    this.fields = header.fields;
    this.catalog = catalog;
    this.override = opts.override;
    this.filter = opts.filter;
    this.trees = new Trees(opts.library ?? libraryFromTable(header, catalog, opts.override));
    this.pool = opts.pool ?? new InlinePool(this.trees, undefined);
    this.pool.createSession(SESSION, { fields: header.fields, maxAgents: Number.MAX_SAFE_INTEGER });
  }

  /**
   * A run over `workers` worker threads (0: on this thread). Decisions are listed in spawn order whatever
   * the number of workers, so the frames are the same bytes; agents cannot be looked at (`agent` is null)
   * and a recording whose trees were reloaded mid-session cannot run this way.
   */
  static async create(header: RecordingHeader, catalog: NodeCatalog, opts: { workers?: number; plugins?: string }): Promise<ReplayRun> {
    const workers = opts.workers ?? 0;
    if (workers === 0) return new ReplayRun(header, catalog);
    const library = libraryFromTable(header, catalog);
    // Workers load trees from a folder: the recorded definitions are written to one.
    const folder = await mkdtemp(join(tmpdir(), 'canopy-replay-trees-'));
    for (const name of library.names()) await writeFile(join(folder, `${name}.json`), JSON.stringify(library.definition(name)));
    // No crash recovery (checkpointMs < 0): a replay has nothing to restore agents for, and each worker
    // packing every agent into a checkpoint and posting it to this thread cost more than the ticking.
    const pool = await createAgentPool({ trees: folder, workers, library, checkpointMs: -1, ...(opts.plugins !== undefined ? { plugins: opts.plugins } : {}) });
    await pool.ready();
    const run = new ReplayRun(header, catalog, { pool, library });
    run.folder = folder;
    return run;
  }

  /** True when the agents tick on worker threads (the tick's promise settles later, not at once). */
  get onWorkers(): boolean {
    return this.folder !== null;
  }

  /** Stops worker threads (if any) and removes their tree folder. */
  async close(): Promise<void> {
    await this.pool.close();
    if (this.folder !== null) await rm(this.folder, { recursive: true, force: true });
  }

  /** The library agents spawn on now. */
  get library(): TreeLibrary {
    return this.trees.library;
  }

  /** Applies one input record (anything but TICK and DECISIONS). */
  apply(kind: Kind, payload: Buffer): void {
    const pool = this.pool;
    switch (kind) {
      case Kind.TREES: {
        if (this.folder !== null) throw new Error('this recording reloads its trees mid-session: replay it on one thread (no --workers)');
        const table = decode(payload) as TreeTable & { reload?: TreesReload };
        const library = libraryFromTable(table, this.catalog, this.override);
        this.trees.library = library;
        // The same reload as in the service: agents on changed trees restart (or keep) before the next tick.
        if (table.reload !== undefined) this.pool.reload(library, new Set(table.reload.changed), table.reload.policy);
        return;
      }
      case Kind.SPAWN:
        pool.spawn(SESSION, decode(payload) as SpawnRecord[]);
        return;
      case Kind.DESPAWN:
        pool.despawn(SESSION, decode(payload) as AgentId[]);
        return;
      case Kind.BB:
        pool.setBlackboard(SESSION, decode(payload) as Array<[AgentId, Record<string, unknown>]>);
        return;
      case Kind.RESULTS:
        this.results(decode(payload) as ActionResult[]);
        return;
      case Kind.LOD:
        pool.lod(SESSION, decode(payload) as Array<[AgentId, number]>);
        return;
      case Kind.SNAPSHOT_FRAME: {
        const parsed = parseClientFrame(payload, Number.MAX_SAFE_INTEGER, { fieldCount: this.fields?.length ?? 0, mode: this.mode, packRows: true });
        if (!parsed.ok || parsed.msg.t !== 'snapshot') throw new Error(`a recorded snapshot frame does not read back: ${parsed.ok ? parsed.msg.t : parsed.message}`);
        this.snapshot(parsed.msg);
        return;
      }
      case Kind.SNAPSHOT:
        this.snapshot(decode(payload) as SnapshotMessage);
        return;
      default:
        return;
    }
  }

  /** Runs one tick (synchronously: the inline pool answers before its promise settles). */
  async tick(t: TickRecord): Promise<TickOutcome> {
    const d = await this.pool.tick(SESSION, t.tick, t.time, t.dt, t.basedOn ?? -1);
    const decisions: DecisionsFields = {
      tick: t.tick,
      basedOn: t.basedOn ?? undefined,
      actions: d.actions as DecisionsFields['actions'],
      cancels: d.cancels,
      done: d.done,
      errors: d.errors as DecisionsFields['errors'],
    };
    return new TickOutcome(t.tick, decisions);
  }

  /** The engine's Agent `id` at this point of the run, or null. */
  agent(id: AgentId): Agent | null {
    return this.pool instanceof InlinePool ? this.pool.agentObject(SESSION, id) : null;
  }

  /** Agents alive now, in spawn order of the routing table. */
  agents(): Array<{ id: AgentId; tree: string; label: string }> {
    return this.pool.listAgents(SESSION).map((a) => ({ id: a.id, tree: a.tree, label: a.label }));
  }

  /** Mirrors Session.applySnapshot: world, observations, results. */
  private snapshot(msg: SnapshotMessage): void {
    if (msg.world !== undefined) this.pool.setWorld(SESSION, msg.world);
    if (msg.agents !== undefined || msg.full === true) {
      this.pool.observe(SESSION, (msg.agents ?? []) as Parameters<AgentPool['observe']>[1], msg.full === true);
    }
    if (msg.results !== undefined) this.results(resultTuples(msg.results));
  }

  private results(results: readonly ActionResult[]): void {
    const kept = this.filter === undefined ? results : this.filter(results);
    if (kept.length > 0) this.pool.results(SESSION, kept);
  }
}

/** Decodes a TICK record. */
export function readTick(payload: Buffer): TickRecord {
  const [tick, time, dt, basedOn] = decode(payload) as [number, number, number, number | null];
  return { tick, time, dt, basedOn };
}
