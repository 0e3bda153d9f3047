// AgentHost: the agents of every session on one thread — a worker, or the caller in the inline pool. It applies
// a tick's buffered input (bb writes, observations, results, world), ticks each agent once, and collects decisions.
// Both pools run this same code, so they cannot diverge.

import { deserialize } from 'node:v8';
import { performance } from 'node:perf_hooks';
import { Agent, type AgentFrame, type AgentId, type CompiledTree, type DecisionSink } from '../../bt/index.js';
// The engine's one code generation site and its template (generate is not part of the engine's public API).
import { CODE_GENERATION, generate, ident, joinCode, js, literal, type Code } from '../../bt/codegen.js';
import { AgentPacking, unpackAgents } from './checkpoint.js';
import type { AgentView } from './types.js';
import { FrameCursor, IdIndex, checkFrameRows, checkRowValue, readResultsAt, type KnownRowIds, type RowReader } from '../../protocol/index.js';
import type { SpawnBatch } from './spawns.js';
import { Tag, type FrameBatch, type FromHost, type InspectorOrder, type ReadOrder, type ReadReply, type RowBatch, type CheckpointOrder, type CheckpointReply, type StageOrder, type StageReply, type StagedPart, type TickOrder, type TickReply, type ToHost, type WorldUpdate } from './wire.js';
import { ColumnSink } from './decisions.js';
import type { ProgressBoard } from './progress.js';
import { restartAgent } from './reload.js';
import { LodTable } from './lod.js';
import { MISS, RowMemo } from './row-memo.js';
import { readVector } from './vectors.js';
import { SLICED_PACK } from './slicer.js';
import { monotonicMs } from './monotonic.js';

/** Where a host finds compiled trees by name (a TreeLibrary). */
export interface TreeLookup {
  get(name: string): CompiledTree | undefined;
}

/** One session's agents on this host, dense by slot (the router hands out slots and reuses freed ones). */
class HostSession {
  readonly fields: readonly string[] | null;
  readonly agents: Array<Agent | null> = [];
  /** Per slot: the observation object positional rows write into, reused across ticks (one hidden class). */
  readonly observations: Array<Record<string, unknown> | null> = [];
  world: unknown = null;
  /** Crash recovery: agents to stop with E_PLUGIN at the next tick instead of ticking them (their plugin kills the worker). */
  readonly stops = new Map<number, string>();
  /** Slots of the watched agents (their Tracer hangs on the Agent). */
  readonly watched = new Set<number>();
  /** Slots of agents to restart on their tree's new version when the session next ticks (a reload). */
  readonly restarts = new Set<number>();
  /** Tick intervals (level of detail), from the first agent of the session given one other than 1; null: all tick every tick. */
  lod: LodTable | null = null;
  /** Tree time of this host's last tick of the session (NaN: none yet): agents ticked then get the next tick's own dt. */
  previous = Number.NaN;
  /** The sink this session's ticks collect decisions in, reused from tick to tick (ColumnSink.reset). */
  sink: ColumnSink | null = null;
  /** Writes one positional row into an observation object (null: the session has no fields). */
  readonly writeRow: RowWriter | null;
  /** Reads one row of values from a frame into an observation object (null: the session has no fields). */
  readonly writeFrameRow: FrameRowWriter | null;
  /** writeFrameRow with the rows' check in it (StageReader); null: the session has no fields, or no code generation. */
  readonly readFrameRow: CheckedRowWriter | null;
  /**
   * Per slot: the agent's other observation object. A stage's rows are read into these while they are checked (the
   * frame may still be refused), then each becomes its agent's observation and the one it replaces the spare.
   */
  readonly spares: Array<Record<string, unknown> | null> = [];
  /** Per slot: the number of the last stage read that had a row for the agent (StageReader; tickAgents swaps those in). */
  stamps = new Int32Array(0);
  /** The number of this session's last stage read (from 1; the stamps are cleared before it would wrap around). */
  stage = 0;
  /**
   * The stage read whose rows wait in the spares for the session's next tick (a lockstep order's own stage; fixed
   * mode's latest ReadOrder, as its snapshot arrived), which swaps them in; NO_SWAP: none. settle() swaps them in
   * earlier: before the next read, and before input that the tick order carries lands on the observations.
   */
  pending = 0;
  /**
   * Agent id → slot, for the rows of snapshot frames this host finds its agents in itself (`stage`): small
   * non-negative integer ids in `dense` (-1: none), string ids that IdIndex files in `strings` (found by a hash of
   * their characters: a Map lookup of a string just deserialized interns it in V8's string table first, about half a
   * microsecond per spawned agent on Node 26), any other in `named`. As the router's routes, for this host's agents.
   */
  private dense = new Int32Array(0);
  private readonly strings = new IdIndex();
  private readonly named = new Map<AgentId, number>();
  private size = 0;
  /** The slot row i found (-1: not an agent here) for ids that miss `dense` (row-memo.ts). Forgets on any add or remove. */
  private readonly rowMemo = new RowMemo();
  /**
   * When this host checks the session's frames alone (StageOrder `scan`): the routes of its agents on other hosts
   * (RoutesOrder), and what row i found last time among all of them (packed `host << 24 | slot`, -1: unknown).
   */
  others: Map<AgentId, number> | null = null;
  private readonly scanMemo = new RowMemo();

  addId(id: AgentId, slot: number): void {
    this.size++;
    this.rowMemo.clear();
    this.scanMemo.clear();
    // An integer id below dense.length is always in `dense`, never in `named` (a -1 there means: not here).
    if (typeof id === 'number' && id >= 0 && Number.isInteger(id) && (id < this.dense.length || id < 2 * (this.size + 512))) {
      if (id >= this.dense.length) this.growDense(id);
      this.dense[id] = slot;
      return;
    }
    if (typeof id === 'string' && this.strings.set(id, slot)) return;
    this.named.set(id, slot);
  }

  private growDense(id: number): void {
    let n = Math.max(1024, this.dense.length * 2);
    while (n <= id) n *= 2;
    const dense = new Int32Array(n).fill(-1);
    dense.set(this.dense);
    this.dense = dense;
    for (const [named, slot] of this.named) {
      if (typeof named === 'number' && named >= 0 && Number.isInteger(named) && named < n) {
        dense[named] = slot;
        this.named.delete(named);
      }
    }
  }

  removeId(id: AgentId): void {
    this.size--;
    this.rowMemo.clear();
    this.scanMemo.clear();
    if (typeof id === 'number' && id >= 0 && Number.isInteger(id) && id < this.dense.length) this.dense[id] = -1;
    else if (typeof id !== 'string' || !this.strings.delete(id)) this.named.delete(id);
  }

  /** The id each row of the session's frames named when last looked up (row-memo.ts); `scan`: among every host's agents. */
  knownRows(scan: boolean): KnownRowIds | null {
    return scan ? this.scanMemo.known() : this.rowMemo.known();
  }

  /** Applies a RoutesOrder: the other hosts' agents, in the order their routes changed. */
  applyRoutes(reset: boolean, ids: readonly AgentId[], packed: Int32Array): void {
    const others = (this.others ??= new Map());
    if (reset) others.clear();
    for (let i = 0; i < ids.length; i++) {
      if (packed[i]! < 0) others.delete(ids[i]!);
      else others.set(ids[i]!, packed[i]!);
    }
    this.scanMemo.clear();
  }

  /** Where the agent of row `i` lives among every host's (packed `host << 24 | slot`), or -1; `me`: this host. */
  routeOfRow(i: number, id: AgentId, me: number): number {
    const memo = this.scanMemo.get(i, id);
    if (memo !== MISS) return memo;
    const slot = this.slotOf(id);
    const at = slot >= 0 ? (me << 24) | slot : (this.others?.get(id) ?? -1);
    this.scanMemo.set(i, id, at);
    return at;
  }

  /** The slot of agent `id` here, or -1; `i` is the row's position in its frame (the memo). */
  slotOfRow(i: number, id: AgentId): number {
    if (typeof id === 'number') {
      const dense = this.dense[id];
      if (dense !== undefined) return dense;
    }
    const memo = this.rowMemo.get(i, id);
    if (memo !== MISS) return memo;
    const slot = this.slotOf(id);
    this.rowMemo.set(i, id, slot);
    return slot;
  }

  /** The slot of agent `id` here, or -1: an integer id within `dense` is there (and never in `named`), a string in `strings` or `named`, any other in `named`. */
  slotOf(id: AgentId): number {
    if (typeof id === 'string') {
      const slot = this.strings.get(id);
      return slot >= 0 || this.named.size === 0 ? slot : (this.named.get(id) ?? -1);
    }
    const dense = this.dense[id];
    return dense !== undefined ? dense : (this.named.get(id) ?? -1);
  }

  constructor(fields: readonly string[] | null) {
    this.fields = fields;
    this.writeRow = fields === null ? null : cachedWriter(rowWriters, fields, rowWriter);
    this.writeFrameRow = fields === null ? null : cachedWriter(frameRowWriters, fields, frameRowWriter);
    this.readFrameRow = fields === null || !CODE_GENERATION ? null : cachedWriter(checkedRowWriters, fields, checkedRowWriter);
  }
}

const rowWriters = new Map<string, RowWriter>();
const frameRowWriters = new Map<string, FrameRowWriter>();
const checkedRowWriters = new Map<string, CheckedRowWriter>();

/**
 * The writer for these fields, shared by every session with the same fields: one function where there would be
 * one per session, so the call in applyFrameRows (or applyRows) sees one target and the compiler inlines it.
 */
function cachedWriter<W>(cache: Map<string, W>, fields: readonly string[], make: (fields: readonly string[]) => W): W {
  const key = JSON.stringify(fields);
  let writer = cache.get(key);
  if (writer === undefined) {
    writer = make(fields);
    if (cache.size < 256) cache.set(key, writer);
  }
  return writer;
}

/** Writes row values `base .. base + fields.length - 1` of a RowBatch into `obs`, in `fields` order. */
export type RowWriter = (obs: Record<string, unknown>, values: Float64Array, tags: Uint8Array, other: readonly unknown[], vectors: Float64Array, base: number) => void;

/**
 * A row writer for these fields. Generated code with one constant-name store per field is ~6× faster than a
 * loop of `obs[fields[k]] = v` (7 vs 43 ns per 3-field row): V8 makes named stores on one hidden class
 * monomorphic, while keyed stores with changing names go through the megamorphic cache. Names enter the
 * source only through `literal` (JSON.stringify), which yields a string literal whatever the name holds.
 * Where code generation is disallowed (--disallow-code-generation-from-strings), the loop is used.
 */
export function rowWriter(fields: readonly string[]): RowWriter {
  if (CODE_GENERATION) {
    const body = joinCode(fields.map((f, k) => js`  obs[${literal(f)}] = ${valueSource(k)};\n`));
    const source = js`return function writeRow(obs, values, tags, other, vectors, base) {\n  let t;\n${body}};`;
    return generate([ident('vector')], source, [readVector]) as RowWriter;
  }
  return (obs, values, tags, other, vectors, base) => {
    for (let k = 0; k < fields.length; k++) {
      const tag = tags[base + k];
      obs[fields[k]!] =
        tag === Tag.NUMBER
          ? values[base + k]
          : tag === Tag.TRUE
            ? true
            : tag === Tag.FALSE
              ? false
              : tag === Tag.NULL
                ? null
                : tag === Tag.VECTOR
                  ? readVector(vectors, values[base + k]!)
                  : other[values[base + k]!];
    }
  };
}

/** Reads the next `fields.length` values of `cursor` into `obs`, in `fields` order. */
export type FrameRowWriter = (obs: Record<string, unknown>, cursor: FrameCursor) => void;

/** A frame row writer for these fields: generated constant-name stores, as rowWriter (a loop without code generation). */
export function frameRowWriter(fields: readonly string[]): FrameRowWriter {
  if (CODE_GENERATION) {
    // The common forms inline (a float64, a small integer, nil, booleans, a pair of float64s); anything else through the cursor.
    const body = joinCode(
      fields.map(
        (f) =>
          js`  t = b[p];\n  if (t === 0xcb) { obs[${literal(f)}] = dv.getFloat64(p + 1); p += 9; }\n  else if (t <= 0x7f) { obs[${literal(f)}] = t; p++; }\n  else if (t === 0xc0) { obs[${literal(f)}] = null; p++; }\n  else if (t === 0xc3) { obs[${literal(f)}] = true; p++; }\n  else if (t === 0xc2) { obs[${literal(f)}] = false; p++; }\n  else if (t === 0x92 && b[p + 1] === 0xcb && b[p + 10] === 0xcb) { obs[${literal(f)}] = [dv.getFloat64(p + 2), dv.getFloat64(p + 11)]; p += 19; }\n  else { cursor.pos = p; obs[${literal(f)}] = cursor.next(); p = cursor.pos; }\n`,
      ),
    );
    const source = js`return function writeFrameRow(obs, cursor) {\n  const b = cursor.bytes;\n  const dv = cursor.view;\n  let p = cursor.pos;\n  let t;\n${body}  cursor.pos = p;\n};`;
    return generate([], source, []) as FrameRowWriter;
  }
  return (obs, cursor) => {
    for (let k = 0; k < fields.length; k++) obs[fields[k]!] = cursor.next();
  };
}

/**
 * Reads one row's values from byte `p` of a frame (`b`, `dv` a view of it, `last` its end) into `obs`, checking them
 * exactly as the rows' check does (checkFrameRows): the position after them, or -1 where the check refuses them.
 * `cursor` is on the same frame (for the forms read through it).
 */
export type CheckedRowWriter = (obs: Record<string, unknown>, b: Uint8Array, dv: DataView, p: number, last: number, cursor: FrameCursor) => number;

/**
 * A checked row writer for these fields (code generation only): frameRowWriter's inline forms with their bounds
 * checked, any other form checked by the protocol's own check of one value (checkRowValue) and read through the cursor.
 */
export function checkedRowWriter(fields: readonly string[]): CheckedRowWriter {
  const body = joinCode(
    fields.map(
      (f) =>
        js`  if (p >= last) return -1;
  t = b[p];
  if (t === 0xcb) { if (p + 9 > last) return -1; obs[${literal(f)}] = dv.getFloat64(p + 1); p += 9; }
  else if (t <= 0x7f) { obs[${literal(f)}] = t; p++; }
  else if (t === 0xc0) { obs[${literal(f)}] = null; p++; }
  else if (t === 0xc3) { obs[${literal(f)}] = true; p++; }
  else if (t === 0xc2) { obs[${literal(f)}] = false; p++; }
  else if (t === 0x92 && p + 19 <= last && b[p + 1] === 0xcb && b[p + 10] === 0xcb) { obs[${literal(f)}] = [dv.getFloat64(p + 2), dv.getFloat64(p + 11)]; p += 19; }
  else { q = check(p); if (q < 0) return -1; cursor.pos = p; obs[${literal(f)}] = cursor.next(); p = q; }
`,
    ),
  );
  const source = js`return function readFrameRow(obs, b, dv, p, last, cursor) {
  let t;
  let q;
${body}  return p;
};`;
  return generate([ident('check')], source, [checkRowValue]) as CheckedRowWriter;
}

/** Receives decisions from despawned agents' halts: the game server removed them, there is nobody to tell. */
const DISCARD: DecisionSink = {
  action() {},
  cancel() {},
  finished() {},
  error() {},
  log() {},
};

/**
 * The last tick order, kept so that its hidden classes live on. A message's objects get, when it is read, hidden
 * classes that only live as long as some object has them; at a mark-compact with no order in flight the class of
 * the decision buffers then handed back in each order died, the next order's got a new one, and that field's type
 * changed: `tick` was thrown away ("dependent field type changed") after most of this thread's mark-compacts (the
 * results and row batches are such fields still). Its frames and batches
 * are emptied or transferred by then: keeping it holds little. An array slot, not a field: no field type of its own.
 */
const keepShape: unknown[] = [null];

/**
 * Ticks every agent of a session once (without level of detail): the hot loop, a function of its own. Inside the
 * tick method the optimizing compiler could spend its inlining budget on the tick's set-up and leave Agent.tick a
 * call, and every such call boxed `time` and `dt` (read from the order as unboxed doubles): two heap numbers per
 * agent-tick, as much as a worker allocated for all its observations (docs/capacity.md, "Round nine"). Here they are
 * parameters, passed on as they came.
 */
function tickAgents(
  agents: ReadonlyArray<Agent | null>,
  time: number,
  dt: number,
  world: unknown,
  out: ColumnSink,
  stops: ReadonlyMap<number, string> | null,
  progress: Pick<ProgressBoard, 'agent'> | null,
  staged: HostSession | null,
  stage: number,
  results: PendingResults | null,
): void {
  // The frame's rows read into spare observations (StageReader): each agent stamped `stage` swaps in its spare here,
  // as it is ticked, rather than in a loop of its own before (one more touch of each agent; that loop was 6–9 % of a
  // worker's samples, and the workers' CPU fell 8 % without it: docs/capacity.md, "Round twenty-one").
  const stamps = staged === null ? null : staged.stamps;
  const spares = staged === null ? EMPTY_OBSERVATIONS : staged.spares;
  const observations = staged === null ? EMPTY_OBSERVATIONS : staged.observations;
  // The frame's results, each agent's delivered right before it ticks (deliverFrameResults).
  const resultStamps = results === null ? null : results.stamps;
  const resultStage = results === null ? 0 : results.stage;
  for (let i = 0; i < agents.length; i++) {
    const a = agents[i];
    if (a === null || a === undefined) continue;
    if (stamps !== null && stamps[i] === stage) swapSpare(spares, observations, i, a);
    if (resultStamps !== null && resultStamps[i] === resultStage) results!.deliver(i, a);
    // Most ticks the world is the one the agent has: setting it again would only re-check its prototype.
    if (a.world !== world) a.world = world;
    out.slot = i;
    if (stops !== null && stops.has(i)) {
      a.stop(out, 'E_PLUGIN', stops.get(i)!);
      continue;
    }
    // The slot tells recovery which agent's plugin killed the worker; the step shows a long tick (50k
    // agents under memory pressure) moving, where a plugin's endless loop does not.
    progress?.agent(i);
    a.tick(time, dt, out);
  }
}

/** Hosts agents of any number of sessions; `handle` takes one router message and returns the reply, if any. */
export class AgentHost {
  private trees: TreeLookup;
  private readonly sessions = new Map<string, HostSession>();
  /** Counts agents ticked for the stall watchdog (worker threads only). */
  private readonly progress: Pick<ProgressBoard, 'step' | 'ticking' | 'agent' | 'ticked'> | null;

  constructor(trees: TreeLookup, progress: Pick<ProgressBoard, 'step' | 'ticking' | 'agent' | 'ticked'> | null = null) {
    this.trees = trees;
    this.progress = progress;
  }

  /** Applies one message. Throws only on a bug or a message the router would never send. */
  handle(msg: ToHost): FromHost | null {
    switch (msg.t) {
      case 'spawn':
        this.spawn(msg.session, msg.fields, msg.agents);
        return null;
      case 'despawn':
        this.despawn(msg.session, msg.slots);
        return null;
      case 'drop':
        this.drop(msg.session);
        return null;
      case 'tick':
        return this.tick(msg);
      case 'checkpoint':
        return this.checkpoint(msg);
      case 'restore':
        this.restore(msg.session, msg.fields, msg.bytes);
        return null;
      case 'stage':
        return this.stage(msg);
      case 'read':
        return this.read(msg);
      case 'settle': {
        const s = this.sessions.get(msg.session);
        if (s !== undefined) settle(s);
        return null;
      }
      case 'routes':
        this.sessions.get(msg.session)?.applyRoutes(msg.reset, msg.ids, msg.packed);
        return null;
      case 'stop':
        this.sessions.get(msg.session)?.stops.set(msg.slot, msg.message);
        return null;
      case 'inspect': {
        const s = this.sessions.get(msg.session);
        const agent = s?.agents[msg.slot] ?? null;
        return { t: 'inspected', req: msg.req, inspection: agent === null ? null : inspectAgent(agent, s!.world, s!.lod?.intervalOf(msg.slot) ?? 1) };
      }
      default:
        return inspectorRequest(this.sessions.get(msg.session), msg);
    }
  }

  /**
   * A reload: new spawns use `trees` from now on; the agents listed per session restart on their tree's new
   * version at the start of their session's next tick (so the cancels go out with that tick's decisions).
   */
  reload(trees: TreeLookup, restart: ReadonlyArray<readonly [string, readonly number[]]>): void {
    this.trees = trees;
    for (const [session, slots] of restart) {
      const s = this.sessions.get(session);
      if (s !== undefined) for (const slot of slots) s.restarts.add(slot);
    }
  }

  /** The agent in `slot` of `session` on this host, or null: for tools on the same thread (replay, inspector). */
  agentAt(session: string, slot: number): Agent | null {
    return this.sessions.get(session)?.agents[slot] ?? null;
  }

  /** The session's agents and world, packed (crash recovery: recovery.ts keeps the bytes on the main thread). */
  private checkpoint(msg: CheckpointOrder): FromHost {
    return packInParts(msg, this.sessions.get(msg.session) ?? new HostSession(null))(Infinity)!;
  }

  /**
   * The checkpoint of a session of more than SLICED_PACK slots, packed a part at a time (the worker's slicer runs
   * the parts between its other messages and holds the session's own until the last): each call packs until
   * `until` and gives the reply once done, else null. Null for a smaller session: `handle` packs it at once. `ms`
   * counts the parts' own time, not the waits between them.
   */
  checkpointInParts(msg: CheckpointOrder): ((until: number) => FromHost | null) | null {
    const s = this.sessions.get(msg.session);
    return s === undefined || s.agents.length <= SLICED_PACK ? null : packInParts(msg, s);
  }

  /**
   * Fixed mode's rows of a snapshot frame the main thread did not read (ReadOrder), as the frame arrives: checked as
   * the protocol's fast path checks them and, if every row passes, read into the spares of this host's agents (one
   * pass over the bytes), which the next tick swaps in. Rows of an earlier frame still in the spares become the
   * observations first (a loop over the agents, cheaper than checking the frame before reading it), so that a frame
   * refused half-way writes only over spares that nothing waits for.
   */
  private read(msg: ReadOrder): ReadReply {
    const { frame, start, count, width } = msg;
    const s = this.sessions.get(msg.session);
    if (s === undefined) return { t: 'rowsRead', req: msg.req, ok: checkStage(frame, start, count, width, null), unknown: count };
    settle(s);
    const known = s.knownRows(false);
    if (s.readFrameRow === null) {
      // Without code generation the rows are checked, then written into the observations.
      if (!checkStage(frame, start, count, width, known)) return { t: 'rowsRead', req: msg.req, ok: false, unknown: 0 };
      return { t: 'rowsRead', req: msg.req, ok: true, unknown: applyStagedRows(s, frame, count) };
    }
    if (!stageReader.read(s, frame, start, count, width, known)) return { t: 'rowsRead', req: msg.req, ok: false, unknown: 0 };
    s.pending = s.stage;
    return { t: 'rowsRead', req: msg.req, ok: true, unknown: stageReader.unknown };
  }

  /**
   * Checks every row of a snapshot frame the main thread did not read, exactly as the protocol's fast path would
   * (so every host gives the same verdict), and lists the rows of this host's agents: (slot, offset) pairs the
   * router hands back with the session's next tick. Applies nothing.
   */
  private stage(msg: StageOrder): StageReply {
    const count = msg.count;
    const s = this.sessions.get(msg.session);
    // No table of the other hosts' agents (never sent, or this is a replacement): the router reads the frame itself.
    if (msg.scan !== null && (s === undefined || s.others === null)) return { t: 'staged', req: msg.req, ok: false, parts: [] };
    const ok = checkStage(msg.frame, msg.start, count, msg.width, msg.all === null && s !== undefined ? s.knownRows(msg.scan !== null) : null);
    if (ok && msg.all !== null) return stageAll(msg, msg.all.routes, msg.all.hosts);
    if (!ok || s === undefined) return { t: 'staged', req: msg.req, ok, parts: [] };
    if (msg.scan !== null) {
      if (stageAt.length < count) stageAt = new Int32Array(Math.max(count, stageAt.length * 2));
      for (let i = 0; i < count; i++) stageAt[i] = s.routeOfRow(i, stageIds[i]!, msg.host);
      return { t: 'staged', req: msg.req, ok: true, parts: partsByHost(count, stageAt, stageOffsets, msg.scan.hosts) };
    }
    const agents = s.agents;
    const ids = stageIds;
    const offsets = stageOffsets;
    let slots = new Int32Array(Math.min(count, agents.length));
    let kept = new Int32Array(slots.length);
    let n = 0;
    for (let i = 0; i < count; i++) {
      const slot = s.slotOfRow(i, ids[i]!);
      if (slot < 0) continue;
      if (n === slots.length) {
        // The same agent in several rows (the last one wins when they apply): more rows than agents.
        const grownSlots = new Int32Array(Math.max(64, n * 2));
        grownSlots.set(slots);
        slots = grownSlots;
        const grownKept = new Int32Array(grownSlots.length);
        grownKept.set(kept);
        kept = grownKept;
      }
      slots[n] = slot;
      kept[n] = offsets[i]!;
      n++;
    }
    return { t: 'staged', req: msg.req, ok: true, parts: n === 0 ? [] : [{ host: msg.host, count: n, slots, offsets: kept }] };
  }

  /** Crash recovery: rebuilds a session's agents from a checkpoint, in their old slots. */
  private restore(session: string, fields: readonly string[] | null, bytes: Uint8Array): void {
    const s = new HostSession(fields);
    this.sessions.set(session, s);
    const { agents, world, lod, previous } = unpackAgents(bytes, fields, this.trees);
    s.world = world;
    s.lod = lod;
    s.previous = previous;
    for (const [slot, agent] of agents) {
      agent.world = world;
      while (s.agents.length <= slot) {
        s.agents.push(null);
        s.observations.push(null);
      }
      s.agents[slot] = agent;
      s.addId(agent.id, slot);
      this.progress?.step();
    }
  }

  private spawn(session: string, fields: readonly string[] | null, orders: SpawnBatch): void {
    let s = this.sessions.get(session);
    if (s === undefined) {
      s = new HostSession(fields);
      this.sessions.set(session, s);
    }
    const bbs = orders.bbs;
    let nextBb = 0;
    // The tree of the previous agent's tree index: a batch mostly holds one tree.
    let lastIndex = -1;
    let tree: CompiledTree | undefined;
    for (let i = 0; i < orders.count; i++) {
      const slot = orders.slots[i]!;
      const numeric = orders.ids[i]!;
      const id = Number.isNaN(numeric) ? orders.names![i]! : numeric;
      const treeIndex = orders.tree[i]!;
      const label = orders.labels[orders.label[i]!]!;
      const seed = orders.seeded[i] === 1 ? orders.seeds[i]! : null;
      const bb = bbs !== null && nextBb < bbs.length && bbs[nextBb]![0] === i ? bbs[nextBb++]![1] : null;
      const every = orders.every === null ? 1 : orders.every[i]!;
      if (treeIndex !== lastIndex) {
        lastIndex = treeIndex;
        tree = this.trees.get(orders.trees[treeIndex]!);
      }
      // The router checked the tree against the same folder; a mismatch is a deployment bug worth a loud failure.
      if (tree === undefined) throw new Error(`host has no tree '${orders.trees[treeIndex]!}'`);
      // Options with only what is set, not spread in from a temporary object each.
      const agent = new Agent(tree, id, seed === null ? (bb === null ? { label } : { label, bb }) : bb === null ? { label, seed } : { label, seed, bb });
      agent.world = s.world;
      while (s.agents.length <= slot) {
        s.agents.push(null);
        s.observations.push(null);
      }
      const before = s.agents[slot];
      if (before !== null && before !== undefined) s.removeId(before.id);
      s.agents[slot] = agent;
      s.addId(id, slot);
      s.observations[slot] = null;
      if (slot < s.stamps.length) s.stamps[slot] = 0; // a row read for the slot's agent before is not the newcomer's
      if (every !== 1) lodOf(s).spawned(slot, id, every);
      else s.lod?.spawned(slot, id, 1);
      this.progress?.step(); // spawning 50,000 agents takes a while: the watchdog sees it move
    }
  }

  private despawn(session: string, slots: readonly number[]): void {
    const s = this.sessions.get(session);
    if (s === undefined) return;
    for (const slot of slots) {
      const agent = s.agents[slot];
      if (agent === null || agent === undefined) continue;
      agent.halt(DISCARD); // plugin halt hooks release what they hold; no cancels go out
      agent.unwatch();
      s.watched.delete(slot);
      s.restarts.delete(slot);
      s.lod?.freed(slot);
      s.removeId(agent.id);
      s.agents[slot] = null;
      s.observations[slot] = null;
      if (slot < s.spares.length) s.spares[slot] = null;
    }
  }

  private drop(session: string): void {
    const s = this.sessions.get(session);
    if (s === undefined) return;
    for (const agent of s.agents) if (agent !== null) agent.halt(DISCARD);
    this.sessions.delete(session);
  }

  private tick(order: TickOrder): TickReply {
    // One clock for the tick's start and its duration: the process-wide one the main thread reads too (TickReply.startedAt).
    const startedAt = monotonicMs();
    keepShape[0] = order;
    const s = this.sessions.get(order.session);
    let out: ColumnSink;
    if (s === undefined) out = new ColumnSink();
    else if (s.sink === null) out = s.sink = new ColumnSink();
    else {
      out = s.sink;
      out.reset();
    }
    let unknown = 0;
    let unknownResults: AgentId[] | null = null;
    if (s !== undefined) {
      const agents = s.agents;
      const stage = order.stage ?? null;
      // The frame's rows are checked before anything of the order applies: rows that fail take the frame back. Where
      // the session can, they are read into the agents' spare observations while they are checked (one pass over the
      // bytes, not two); where that gives up (rows the check refuses), the check says so again on its own.
      const known = stage === null ? null : s.knownRows(false);
      const read = stage !== null && s.readFrameRow !== null && stageReader.read(s, stage.frame, stage.start, stage.count, stage.width, known);
      if (read) s.pending = s.stage;
      const refused = stage !== null && !read && !checkStage(stage.frame, stage.start, stage.count, stage.width, known);
      if (!refused && s.restarts.size > 0) this.restart(s, out);
      if (order.lod !== undefined && order.lod !== null) {
        const lod = lodOf(s);
        for (const [slot, every] of order.lod) {
          const a = agents[slot];
          if (a !== null && a !== undefined) lod.change(slot, a.id, every);
        }
      }
      if (order.bb !== null) {
        for (const [slot, values] of order.bb) agents[slot]?.setBlackboard(values);
      }
      if (order.clear) {
        for (let i = 0; i < agents.length; i++) {
          const a = agents[i];
          if (a !== null && a !== undefined) a.self = null;
        }
      }
      if (order.rows !== null) applyRows(s, order.rows);
      if (order.frameRows !== null) applyFrameRows(s, order.frameRows);
      if (order.objects !== null) {
        for (const [slot, obs] of order.objects) {
          const a = agents[slot];
          if (a !== null && a !== undefined) a.self = obs;
        }
      }
      // Rows read into the spares since the last tick (this order's stage, fixed mode's read orders) become the
      // observations as their agents tick (tickAgents: one touch of each agent).
      const swap = refused ? NO_SWAP : s.pending;
      if (!refused) s.pending = NO_SWAP;
      if (stage !== null && !refused) unknown = read ? stageReader.unknown : applyStagedRows(s, stage.frame, stage.count);
      if (order.results !== null) {
        const data = order.results.data;
        // A refused frame's results are not applied: only those that were waiting before it.
        const count = refused ? stage!.resultsFrom : order.results.count;
        for (let i = 0; i < count; i++) {
          const a = agents[data[i * 3]!];
          if (a !== null && a !== undefined) a.deliverResult(data[i * 3 + 1]!, data[i * 3 + 2] === 1);
        }
      }
      // Without level of detail, every agent ticks now: its results wait for its tick (tickAgents), all at hand then.
      const frameResults = stage !== null && !refused && stage.frameResults >= 0;
      const deferResults = frameResults && s.lod === null;
      if (frameResults) unknownResults = deliverFrameResults(s, stage.frame, stage.frameResults, deferResults);
      if (order.world !== null) s.world = worldOf(order.world);
      if (refused) {
        return { t: 'ticked', req: order.req, ms: monotonicMs() - startedAt, startedAt, decisions: out.shared(order.columns), rows: order.rows, frameRows: order.frameRows, results: order.results, frames: null, refused: true };
      }
      if (stage !== null && stage.world !== null) s.world = worldOf(stage.world);
      const { time, dt } = order;
      const world = s.world;
      if (s.watched.size > 0) for (const slot of s.watched) agents[slot]!.trace!.nextTick = order.tick;
      const progress = this.progress;
      const stops = s.stops.size > 0 ? s.stops : null;
      const lod = s.lod;
      progress?.ticking(order.req);
      // Level of detail has its own loop: without it, this one is as it always was.
      if (lod !== null) {
        if (swap !== NO_SWAP) swapStamped(s, swap);
        this.tickLod(s, lod, order, out);
      } else {
        tickAgents(agents, time, dt, world, out, stops, progress, swap === NO_SWAP ? null : s, swap, deferResults ? pendingResults : null);
        if (deferResults) pendingResults.clear();
      }
      const unsendable = out.takeUnsendable();
      if (unsendable !== null) this.stopUnsendable(agents, unsendable, out);
      progress?.ticked();
      if (stops !== null) stops.clear();
      s.previous = order.time;
    }
    return {
      t: 'ticked',
      req: order.req,
      ms: monotonicMs() - startedAt,
      startedAt,
      decisions: out.shared(order.columns),
      rows: order.rows,
      frameRows: order.frameRows,
      results: order.results,
      frames: s === undefined || s.watched.size === 0 ? null : newestFrames(s, order.tick),
      unknown,
      unknownResults,
    };
  }

  /**
   * Stops the agents whose actions could not be encoded this tick (args a plugin made, with a cycle): the action is
   * not sent, the agent gets E_PLUGIN with the reason, its other running actions are cancelled, the others go on.
   */
  private stopUnsendable(agents: ReadonlyArray<Agent | null>, unsendable: ReadonlyArray<readonly [number, string]>, out: ColumnSink): void {
    for (const [slot, why] of unsendable) {
      const a = agents[slot];
      if (a === null || a === undefined || a.stopped) continue;
      out.slot = slot;
      a.stop(out, 'E_PLUGIN', why);
    }
  }

  /**
   * The tick loop of a session with level of detail: an agent waiting out its interval is skipped (its input
   * stays buffered in it: observation, blackboard writes and results are read at its next tick); one that ticks
   * gets the time since its own last tick as `dt` (the tick's own dt if it ticked at the previous tick or never).
   */
  private tickLod(s: HostSession, lod: LodTable, order: TickOrder, out: ColumnSink): void {
    const agents = s.agents;
    const time = order.time;
    const world = s.world;
    const every = lod.every;
    const wait = lod.wait;
    const last = lod.last;
    const previous = s.previous;
    const progress = this.progress;
    const stops = s.stops.size > 0 ? s.stops : null;
    for (let i = 0; i < agents.length; i++) {
      const a = agents[i];
      if (a === null || a === undefined) continue;
      out.slot = i;
      if (stops !== null && stops.has(i)) {
        a.stop(out, 'E_PLUGIN', stops.get(i)!);
        continue;
      }
      if (i < wait.length) {
        const w = wait[i]!;
        if (w > 0) {
          wait[i] = w - 1;
          continue;
        }
        wait[i] = every[i]! - 1;
      }
      const before = i < last.length ? last[i]! : Number.NaN;
      if (i < last.length) last[i] = time;
      if (a.world !== world) a.world = world;
      progress?.agent(i);
      // NaN (never ticked) or the previous tick: the tick's own dt, exactly as without level of detail.
      a.tick(time, before !== before || before === previous ? order.dt : time - before, out);
    }
  }

  /** Restarts the agents a reload marked, before this tick's input applies: their halts' cancels go into `out`. */
  private restart(s: HostSession, out: ColumnSink): void {
    for (const slot of s.restarts) {
      const old = s.agents[slot];
      const tree = old === null || old === undefined ? undefined : this.trees.get(old.tree.name);
      if (tree === undefined) continue; // despawned, or its tree was removed since: it stays as it is
      out.slot = slot;
      s.agents[slot] = restartAgent(old!, tree, out);
    }
    s.restarts.clear();
  }
}

/**
 * The session's level-of-detail table, created on first use: the agents already there have ticked every tick
 * (the last one at `previous`, unless spawned since), so each keeps an exact `dt` whatever its next interval.
 */
function lodOf(s: HostSession): LodTable {
  if (s.lod !== null) return s.lod;
  const lod = new LodTable();
  const agents = s.agents;
  for (let i = 0; i < agents.length; i++) {
    const a = agents[i];
    // An agent spawned since the last tick has not ticked: its time is not that tick's (or, at time 0, it reads the same dt).
    if (a !== null && a !== undefined) lod.adopt(i, a.time === s.previous ? s.previous : Number.NaN);
  }
  s.lod = lod;
  return lod;
}

/** The frame each watched agent recorded on tick `tick` (a stopped agent records none). */
function newestFrames(s: HostSession, tick: number): Array<[number, AgentFrame]> | null {
  const list: Array<[number, AgentFrame]> = [];
  for (const slot of s.watched) {
    const frame = s.agents[slot]?.trace?.latest() ?? null;
    if (frame !== null && frame.tick === tick) list.push([slot, frame]);
  }
  return list.length === 0 ? null : list;
}

/** Watch, unwatch, frames and why for one agent of a session (null/false/[] when it is unknown). */
function inspectorRequest(s: HostSession | undefined, msg: InspectorOrder): FromHost | null {
  const agent = s?.agents[msg.slot] ?? null;
  switch (msg.t) {
    case 'watch':
      if (s === undefined || agent === null) return { t: 'watching', req: msg.req, ok: false };
      agent.watch(msg.ticks);
      s.watched.add(msg.slot);
      return { t: 'watching', req: msg.req, ok: true };
    case 'unwatch':
      agent?.unwatch();
      s?.watched.delete(msg.slot);
      return null;
    case 'frames':
      return { t: 'frames', req: msg.req, frames: agent?.trace?.frames(msg.since ?? undefined) ?? [] };
    case 'why':
      return { t: 'why', req: msg.req, report: agent === null ? null : (agent.trace?.why(agent, msg.tick) ?? null) };
    case 'force':
      // Only a watched agent runs the traced program that honours forced statuses: others cannot be forced.
      return { t: 'forced', req: msg.req, ok: agent?.trace?.force(msg.node, msg.status) ?? false };
  }
}

/**
 * The engine's inspection plus what a user debugging over HTTP needs: the agent's observation (`self`), the
 * session's `world`, and on action nodes the action they start (`action`; an unnamed action node shows it as
 * its `name` too, rather than null).
 */
function inspectAgent(agent: Agent, world: unknown, every: number): AgentView {
  const base = agent.inspect();
  const nodes = agent.tree.nodes;
  return {
    ...base,
    every,
    nodes: base.nodes.map((n) => {
      const action = nodes[n.index]?.action;
      return action === undefined ? n : { ...n, name: n.name ?? action, action };
    }),
    self: agent.self,
    world,
  };
}

/** Source of the expression decoding value k of a row (generated code of rowWriter). */
function valueSource(k: number): Code {
  return js`(t = tags[base + ${k}]) === ${Tag.NUMBER} ? values[base + ${k}] : t === ${Tag.TRUE} ? true : t === ${Tag.FALSE} ? false : t === ${Tag.NULL} ? null : t === ${Tag.VECTOR} ? vector(vectors, values[base + ${k}]) : other[values[base + ${k}]]`;
}

const cursor = new FrameCursor();
const EMPTY_FRAME = new Uint8Array(0);
const EMPTY_VIEW = new DataView(EMPTY_FRAME.buffer);
/**
 * The rows of every host, for a stage whose session routes every agent in `routes` (the router's table of small
 * integer ids, in shared memory): any id not in it names no agent. The rows were checked (stageIds, stageOffsets).
 */
/**
 * A session's checkpoint, packed a part at a time: each call packs until `until` (Infinity: to the end, at once) and
 * gives the reply once done, else null. `ms` counts the parts' own time, `longestMs` the longest part.
 */
function packInParts(msg: CheckpointOrder, s: HostSession): (until: number) => FromHost | null {
  const { req } = msg;
  const form = msg.local === true ? 'local' : 'portable';
  settle(s); // the rows read since the last tick are part of the agents' state
  const packing = new AgentPacking(s.agents, s.fields);
  let ms = 0;
  let longestMs = 0;
  let packed = false;
  return (until) => {
    const started = performance.now();
    let bytes: Uint8Array | null = null;
    // The serialization (~1.4 ms for 6,250 agents) is a part of its own, unless the parts run to the end at once.
    if (packed) {
      bytes = packing.finish(s.world, s.lod, s.previous, form);
    } else {
      packed = packing.step(until);
      if (packed && until === Infinity) bytes = packing.finish(s.world, s.lod, s.previous, form);
    }
    const part = performance.now() - started;
    ms += part;
    longestMs = Math.max(longestMs, part);
    if (bytes === null) return null;
    const reply: CheckpointReply = { t: 'checkpointed', req, agents: packing.count, bytes, ms, longestMs };
    if (form === 'local') reply.reused = packing.reused;
    return reply;
  };
}

function stageAll(msg: StageOrder, routes: Int32Array, hosts: number): StageReply {
  const count = msg.count;
  const ids = stageIds;
  if (stageAt.length < count) stageAt = new Int32Array(Math.max(count, stageAt.length * 2));
  const at = stageAt;
  for (let i = 0; i < count; i++) {
    const id = ids[i]!;
    at[i] = typeof id === 'number' ? (routes[id] ?? -1) : -1;
  }
  return { t: 'staged', req: msg.req, ok: true, parts: partsByHost(count, at, stageOffsets, hosts) };
}

/** Rows by host: row i goes to `at[i]` (packed `host << 24 | slot`, -1: nobody), its values at `offsets[i]`. */
function partsByHost(count: number, at: Int32Array, offsets: Int32Array, hosts: number): StagedPart[] {
  const counts = new Int32Array(hosts);
  // Two passes: how many rows each host gets, then each host's lists sized exactly. Typed arrays and locals in the
  // loops (a first version kept [host, count, slots, offsets] tuples: generic element loads per row, 40 % of the stage).
  for (let i = 0; i < count; i++) {
    const packed = at[i]!;
    if (packed >= 0) counts[packed >>> 24]!++;
  }
  const parts: StagedPart[] = [];
  for (let h = 0; h < hosts; h++) {
    const n = counts[h]!;
    if (n === 0) continue;
    const slots = new Int32Array(n);
    const kept = new Int32Array(n);
    let j = 0;
    for (let i = 0; i < count; i++) {
      const packed = at[i]!;
      if (packed < 0 || packed >>> 24 !== h) continue;
      slots[j] = packed & 0xffffff;
      kept[j] = offsets[i]!;
      j++;
    }
    parts.push({ host: h, count: n, slots, offsets: kept });
  }
  return parts;
}

/** A stage's ids and offsets of every row, and where each row goes (stageAll), reused from frame to frame. */
const stageIds: AgentId[] = [];
let stageOffsets = new Int32Array(1024);
let stageAt = new Int32Array(1024);

/**
 * Checks a frame's rows as the protocol's fast path does (checkFrameRows), their ids and offsets left in stageIds and
 * stageOffsets. `known`: the ids the session's rows named last time (string ids spelled the same are those strings).
 */
function checkStage(frame: Uint8Array, start: number, count: number, width: number, known: KnownRowIds | null): boolean {
  if (stageOffsets.length < count) stageOffsets = new Int32Array(Math.max(count, stageOffsets.length * 2));
  return checkFrameRows(frame, start, count, width, stageIds, stageOffsets, known);
}

/**
 * Reads a stage's rows into the agents' spare observations while checkFrameRows checks them (a RowReader): `read`
 * is true when every row passed, each agent that had a row then stamped with the read's number (HostSession.stage, in
 * its stamps; an agent in two rows has its spare hold the last row's values), and `unknown` rows naming no
 * agent here. False when the check refused them: nothing visible changed.
 */
class StageReader implements RowReader {
  private s: HostSession | null = null;
  private bytes: Uint8Array = EMPTY_FRAME;
  private view: DataView = EMPTY_VIEW;
  private last = 0;
  /** Rows of this read that name no agent of the session. */
  unknown = 0;
  /** What rows that name no agent here are read into: they are checked all the same. */
  private readonly scratch: Record<string, unknown> = {};

  read(s: HostSession, frame: Uint8Array, start: number, count: number, width: number, known: KnownRowIds | null): boolean {
    if (stageOffsets.length < count) stageOffsets = new Int32Array(Math.max(count, stageOffsets.length * 2));
    const slots = s.agents.length;
    while (s.spares.length < slots) s.spares.push(null);
    if (s.stamps.length < slots) {
      const stamps = new Int32Array(Math.max(slots, s.stamps.length * 2));
      stamps.set(s.stamps);
      s.stamps = stamps;
    }
    this.s = s;
    this.bytes = frame;
    this.view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
    this.last = frame.length;
    this.unknown = 0;
    nextStamp(s, s.stamps); // this read's number: s.stage
    cursor.frame(frame);
    try {
      return checkFrameRows(frame, start, count, width, stageIds, stageOffsets, known, this);
    } finally {
      this.s = null;
      this.bytes = EMPTY_FRAME;
      this.view = EMPTY_VIEW;
      cursor.frame(EMPTY_FRAME);
    }
  }

  values(i: number, id: AgentId, p: number): number {
    const s = this.s!;
    const slot = s.slotOfRow(i, id);
    const agent = slot < 0 ? undefined : s.agents[slot];
    let obs: Record<string, unknown>;
    if (agent === null || agent === undefined) {
      this.unknown++;
      obs = this.scratch;
    } else {
      s.stamps[slot] = s.stage;
      obs = s.spares[slot] ?? (s.spares[slot] = {});
    }
    return s.readFrameRow!(obs, this.bytes, this.view, p, this.last, cursor);
  }
}

const stageReader = new StageReader();
/** No rows read into spares this tick (a read's number is never 0). */
const NO_SWAP = 0;
const EMPTY_OBSERVATIONS: Array<Record<string, unknown> | null> = [];

/**
 * The spare observation of each agent stamped `stage` made its observation (the one it replaces becomes the spare):
 * what tickAgents does agent by agent as it ticks them, for a session whose agents do not all tick (level of detail).
 */
function swapStamped(s: HostSession, stage: number): void {
  const { agents, stamps } = s;
  for (let slot = 0; slot < agents.length; slot++) {
    const agent = agents[slot];
    if (agent !== null && agent !== undefined && stamps[slot] === stage) swapSpare(s.spares, s.observations, slot, agent);
  }
}

/** The rows waiting in the spares for the session's next tick become the observations now (HostSession.pending). */
function settle(s: HostSession): void {
  if (s.pending === NO_SWAP) return;
  swapStamped(s, s.pending);
  s.pending = NO_SWAP;
}

/** Agent `slot`'s spare observation made its observation, the one it replaces the spare. */
function swapSpare(spares: Array<Record<string, unknown> | null>, observations: Array<Record<string, unknown> | null>, slot: number, agent: Agent): void {
  const obs = spares[slot]!;
  spares[slot] = observations[slot] ?? null;
  observations[slot] = obs;
  agent.setPlainSelf(obs);
}

/**
 * The rows checkStage just passed, each applied to its agent here, in order (an agent in several rows: the last
 * wins). Returns how many rows name no agent of the session.
 */
function applyStagedRows(s: HostSession, frame: Uint8Array, count: number): number {
  const write = s.writeFrameRow;
  const ids = stageIds;
  const offsets = stageOffsets;
  const agents = s.agents;
  const observations = s.observations;
  let unknown = 0;
  cursor.frame(frame);
  for (let i = 0; i < count; i++) {
    const slot = s.slotOfRow(i, ids[i]!);
    const agent = slot < 0 ? undefined : agents[slot];
    if (agent === null || agent === undefined) {
      unknown++;
      continue;
    }
    if (write === null) continue;
    let obs = observations[slot];
    if (obs === null || obs === undefined) obs = observations[slot] = {};
    cursor.pos = offsets[i]!;
    write(obs, cursor);
    if (agent.self !== obs) agent.self = obs;
  }
  cursor.frame(EMPTY_FRAME);
  return unknown;
}

/**
 * Delivers the results a stage's frame holds (TickStage `frameResults`, checked by the router's reader, read here:
 * the main thread no longer reads, routes and copies each one). The ids of those that name no agent here, or null.
 * `defer`: each agent's results are left in `pendingResults` for tickAgents to deliver right before it ticks the
 * agent (its state is at hand then: delivered here, each result was a few cache misses of its own); in the frame's
 * order, after any delivered before.
 */
function deliverFrameResults(s: HostSession, frame: Uint8Array, start: number, defer: boolean): AgentId[] | null {
  const results = readResultsAt(frame, start);
  if (results === undefined) throw new Error('results in a stage that do not read (a bug)');
  const { ids, seqs, ok } = results;
  const count = results.count;
  const agents = s.agents;
  const slots = pendingResults.slotsFor(count);
  let unknown: AgentId[] | null = null;
  for (let i = 0; i < count; i++) {
    const id = ids[i]!;
    const slot = s.slotOf(id);
    const a = slot < 0 ? undefined : agents[slot];
    if (a === null || a === undefined) {
      (unknown ??= []).push(id);
      slots[i] = -1;
    } else slots[i] = slot;
  }
  if (!defer) {
    for (let i = 0; i < count; i++) if (slots[i]! >= 0) agents[slots[i]!]!.deliverResult(seqs[i]!, ok[i] === 1);
    return unknown;
  }
  const pending = pendingResults.start(agents.length, seqs, ok);
  // Each agent's results chained in the frame's order: built from the last.
  for (let i = count - 1; i >= 0; i--) {
    const slot = slots[i]!;
    if (slot >= 0) pending.add(slot, i);
  }
  return unknown;
}

/**
 * A frame's results waiting for their agents' ticks (deliverFrameResults with `defer`): per slot, the first of its
 * results (`first`, valid where `stamps` holds this tick's number), each result's next for the same agent (`next`,
 * -1: none).
 */
class PendingResults {
  /** This tick's number: never 0, which every slot's stamp starts at. */
  stage = 0;
  stamps = new Int32Array(0);
  first = new Int32Array(0);
  next = new Int32Array(0);
  slotOfResult = new Int32Array(0);
  seqs: Float64Array = new Float64Array(0);
  ok: Uint8Array = new Uint8Array(0);

  /** Room for `count` results: the array each result's slot is found into (-1: no agent here). */
  slotsFor(count: number): Int32Array {
    if (this.next.length < count) {
      const n = Math.max(count, this.next.length * 2);
      this.next = new Int32Array(n);
      this.slotOfResult = new Int32Array(n);
    }
    return this.slotOfResult;
  }

  /** A frame's results, `seqs` and `ok`, to wait for the ticks of a session of `slots` slots (add each, after slotsFor). */
  start(slots: number, seqs: Float64Array, ok: Uint8Array): this {
    if (this.stamps.length < slots) {
      const n = Math.max(slots, this.stamps.length * 2);
      this.stamps = new Int32Array(n);
      this.first = new Int32Array(n);
    }
    nextStamp(this, this.stamps);
    this.seqs = seqs;
    this.ok = ok;
    return this;
  }

  /** Result i for the agent in `slot`, before any added for it so far. */
  add(slot: number, i: number): void {
    if (this.stamps[slot] === this.stage) this.next[i] = this.first[slot]!;
    else {
      this.stamps[slot] = this.stage;
      this.next[i] = -1;
    }
    this.first[slot] = i;
  }

  /** Delivers agent `slot`'s results to it. */
  deliver(slot: number, a: Agent): void {
    const { next, seqs, ok } = this;
    for (let i = this.first[slot]!; i >= 0; i = next[i]!) a.deliverResult(seqs[i]!, ok[i] === 1);
  }

  /** Nothing waits any more (its arrays hold only the last frame's columns). */
  clear(): void {
    nextStamp(this, this.stamps);
    this.seqs = EMPTY_SEQS;
    this.ok = EMPTY_OK;
  }
}

/**
 * The next number of a counter whose numbers stamp slots (`stamps`): never 0, which every stamp starts at, and never
 * one a slot still holds from before — at the largest int32 the stamps are cleared and the count starts again, where
 * a number that wrapped around would, some months into a busy service, have matched a stamp as old.
 */
export function nextStamp(counter: { stage: number }, stamps: Int32Array): number {
  if (counter.stage >= 0x7fffffff) {
    stamps.fill(0);
    counter.stage = 0;
  }
  return ++counter.stage;
}

const EMPTY_SEQS = new Float64Array(0);
const EMPTY_OK = new Uint8Array(0);
const pendingResults = new PendingResults();

/** The world as a tick order carries it. */
function worldOf(update: WorldUpdate): unknown {
  return 'bytes' in update ? deserialize(update.bytes) : update.value;
}

/** Reads rows still in their frames into each agent's reused observation object and makes it the agent's `self`. */
function applyFrameRows(s: HostSession, rows: FrameBatch): void {
  const write = s.writeFrameRow;
  if (write === null) return;
  const { count, slots, offsets, frames, ends } = rows;
  const agents = s.agents;
  const observations = s.observations;
  let j = -1;
  let end = 0;
  for (let i = 0; i < count; i++) {
    if (i >= end) {
      // Frames whose rows all went to other hosts leave empty segments: skip them.
      while (i >= end) end = ends[++j]!;
      cursor.frame(frames[j]!);
    }
    const slot = slots[i]!;
    const agent = agents[slot];
    if (agent === null || agent === undefined) continue;
    let obs = observations[slot];
    if (obs === null || obs === undefined) obs = observations[slot] = {};
    cursor.pos = offsets[i]!;
    write(obs, cursor);
    // Most ticks the agent already has this object (it is reused): setting it again would only re-check its prototype.
    if (agent.self !== obs) agent.self = obs;
  }
  // Handed back for reuse without the frames: they are not cloned back to the router.
  frames.length = 0;
  ends.length = 0;
  cursor.frame(EMPTY_FRAME);
}

/** Writes positional rows into each agent's reused observation object and makes it the agent's `self`. */
function applyRows(s: HostSession, rows: RowBatch): void {
  const write = s.writeRow;
  if (write === null) return; // the router never sends rows to a session without fields
  const { count, width, slots, values, tags, other, vectors } = rows;
  const agents = s.agents;
  const observations = s.observations;
  for (let i = 0; i < count; i++) {
    const slot = slots[i]!;
    const agent = agents[slot];
    if (agent === null || agent === undefined) continue; // despawned after the row was buffered
    let obs = observations[slot];
    // Created on first use and filled in `fields` order: every agent's object gets the same hidden class.
    if (obs === null || obs === undefined) obs = observations[slot] = {};
    write(obs, values, tags, other, vectors, i * width);
    if (agent.self !== obs) agent.self = obs;
  }
  // The batch travels back to the router for reuse: emptied, its non-numeric values are not cloned back
  // only to be dropped (measured at 50k agents: service CPU 1.42 → 1.12 cores, tick 45 → 10 ms).
  rows.other.length = 0;
}
