// The main-thread half of every pool: sessions, the routing table (agent id → host, slot), the checks that
// answer spawn/bb/result errors synchronously, and the per-host buffering that makes a session tick one message
// per host. Subclasses only carry messages: InlinePool calls its AgentHost directly, WorkerPool posts to threads.

import type { Agent, AgentFrame, AgentId, CompiledTree, WatchedFrame, WhyReport } from '../../bt/index.js';
import { packAgents, unpackAgents } from './checkpoint.js';
import { keepParts, mergeDecisions, type DecisionLists } from './decisions.js';
import { SessionShard } from './shard.js';
import { emitLogs, type LogAgentLookup, type LogColumns } from './logs.js';
import type { AgentListing, AgentPool, AgentView, Decisions, EntryError, FrameTick, PoolLogEvent, PoolLogger, ReloadOutcome, ReloadPolicy, SessionExport, SpawnEntry, UnreadFrame, WorkerStats } from './types.js';
import type { TreeLibrary } from '../../bt/library.js';
import { transferList, type FromHost, type HostRequest, type ReadOrder, type StageOrder, type StagedPart, type TickOrder, type TickReply, type TickStage, type ToHost, type WorldUpdate } from './wire.js';
import { SpawnBatchBuilder } from './spawns.js';
import type { TreeLookup } from './host.js';
import { IdIndex, Msg, ResultColumns, isAgentId, isPackedRows, stagedAsFrameRows, type KnownIds, type KnownRowIds, type PackedRows, type ResultList, type StagedRows } from '../../protocol/index.js';
import { LodTable, badEvery } from './lod.js';
import { MISS, RowMemo } from './row-memo.js';

/** Where one agent lives: built on demand (the table keeps it packed, see RouterSession.routes). */
interface Route {
  readonly host: number;
  readonly slot: number;
  readonly tree: CompiledTree;
  readonly label: string;
  /** The spawn's own reload policy, if it named one. */
  readonly reload?: ReloadPolicy;
}

/** A session as the router keeps it. */
class RouterSession implements KnownIds {
  readonly name: string;
  readonly fields: readonly string[] | null;
  readonly maxAgents: number;
  /**
   * The routing table: id → `host << 24 | slot` (a small integer, no object per agent: at 1,000,000 agents a Route
   * object each was ~50 bytes and an object more for the GC). The agent's tree and label are kept per slot in its
   * host's shard, a spawn's own reload policy in `reloads`; `route(id)` puts them together. Integer ids are here, and
   * the rare string ids `ids` does not file (not ASCII; `oddIds` counts them); the other string ids are in `ids` only:
   * a Map lookup of a string the decoder has just made interns it in V8's string table first, about half a
   * microsecond per spawned or despawned agent on Node 26. `at`, `count` and `entries` read both.
   */
  private readonly routes = new Map<AgentId, number>();
  private oddIds = 0;
  /** The spawns' own reload policies (few agents name one). */
  readonly reloads = new Map<AgentId, ReloadPolicy>();
  /**
   * The string ids of the routing table (those readId reads) with their routes, found by a hash of their characters,
   * or from a frame's bytes: results name them without a new string or a Map lookup each (rows.ts).
   */
  readonly ids = new IdIndex();
  /**
   * A cache of `routes` for small non-negative integer ids (the common case), packed `host << 24 | slot`,
   * -1 when not cached: the rows hot path reads 4 contiguous bytes instead of a Map entry and a Route object.
   * `routes` stays the truth; a miss here falls back to it.
   */
  fast: Int32Array<ArrayBufferLike> = new Int32Array(new SharedArrayBuffer(0));
  /**
   * Routes held in `fast`. When that is every route, `fast` alone says where any id lives, and one worker can find
   * every worker's rows of a frame (`stageRows`): so `fast` lives in shared memory, read by that worker.
   */
  denseRoutes = 0;
  /** Where the rows of the last snapshots found their agents (row-memo.ts), packed as in `fast`; found ones only. */
  readonly rowMemo = new RowMemo();
  /** Moves whenever a route comes or goes: rows the workers staged against an older version are routed here instead. */
  version = 0;
  /** Which worker checks the session's next frame alone (`stageRows`, dense ids): they take turns. */
  nextScanner = 0;
  /**
   * The worker that checks the session's frames alone when its ids are not all dense (-1: none yet, or it was
   * replaced): it holds the routes of the agents on the other workers, kept up to date by RoutesOrders. The route
   * changes since the last one sent: `scanIds[k]` moved to `scanPacked[k]` (-1: it went).
   */
  scanner = -1;
  /**
   * The worker the session's new agents go to while the workers stay balanced enough (PoolRouter.place): the least
   * loaded one when its first agent came, or when the one before went down; -1 before that.
   */
  home = -1;
  /**
   * False until the session's first tick (a `clocked` one's first after its game sent it input): a game server still
   * spawning its agents (PoolRouter.homeFor).
   */
  ticked = false;
  /** The session ticks on its own clock (fixed mode), from before its game spawns: only `playing` ends the spawning. */
  clocked = false;
  /** True once the game sent the session a snapshot's rows, world or results, or action results. */
  playing = false;
  /** Agents of a spawn handled in parts (`spawn`'s `more`) still to come: placement counts them on its home already. */
  remaining = 0;
  /**
   * When the session last spawned, or was created (`performance.now()`): placement takes it as still spawning for
   * `spawningMs` after (PoolRouter.spawning).
   */
  spawnedAt = performance.now();
  /**
   * True from a fixed-mode frame read on the worker (readFrame) until the session's next tick order: its rows wait in
   * the worker's spares for that tick, so rows read here (observe), which ride the tick order, have them settled first.
   */
  readPending = false;
  scanIds: AgentId[] = [];
  scanPacked: number[] = [];
  shards: SessionShard[];
  world: unknown = null;
  worldVersion = 0;
  ticking = false;
  /** Agents lost in a worker crash, reported once with the next tick. */
  lost: Array<[AgentId, string, string]> = [];
  /** Decisions of a tick that rejected (a worker crashed): delivered with the next tick. */
  carried: DecisionLists[] = [];
  /** Spawn counter: the order decisions are listed in, whatever the number of workers. */
  nextOrdinal = 0;

  constructor(name: string, fields: readonly string[] | null, maxAgents: number, hosts: number) {
    this.name = name;
    this.fields = fields;
    this.maxAgents = maxAgents;
    this.shards = Array.from({ length: hosts }, () => new SessionShard(fields?.length ?? 0));
  }

  rowIds(): KnownRowIds | null {
    return this.rowMemo.known();
  }

  /** Where agent `id` lives, or undefined. Allocates: not for a per-row path (`locate` is). */
  route(id: AgentId): Route | undefined {
    const at = this.at(id);
    return at === undefined ? undefined : this.routeAt(id, at);
  }

  /** Where agent `id` lives, packed `host << 24 | slot`, or undefined. */
  at(id: AgentId): number | undefined {
    if (typeof id === 'string') {
      const at = this.ids.get(id);
      if (at >= 0) return at;
      if (this.oddIds === 0) return undefined;
    }
    return this.routes.get(id);
  }

  /** Agents routed. */
  get count(): number {
    return this.routes.size + this.ids.size;
  }

  /** Every route, [id, packed], in the order the agents were spawned (a copy: routes may change meanwhile). */
  entries(): Array<[AgentId, number]> {
    const list = [...this.routes];
    if (this.ids.size === 0) return list;
    this.ids.forEach((id, at) => list.push([id, at]));
    const ordinal = (at: number): number => this.shards[at >>> 24]!.ordinals[at & 0xffffff]!;
    return list.toSorted((a, b) => ordinal(a[1]) - ordinal(b[1]));
  }

  /** The Route of agent `id` living at `at` (packed). */
  routeAt(id: AgentId, at: number): Route {
    const host = at >>> 24;
    const slot = at & 0xffffff;
    const shard = this.shards[host]!;
    const reload = this.reloads.size === 0 ? undefined : this.reloads.get(id);
    return reload === undefined
      ? { host, slot, tree: shard.trees[slot]!, label: shard.labels[slot]! }
      : { host, slot, tree: shard.trees[slot]!, label: shard.labels[slot]!, reload };
  }

  /**
   * Takes the route's parts, not a `{ host, slot, ... }` object: such a literal shares V8's hidden class with every
   * other object literal that starts with a `host` key (a log line's `{ host: '127.0.0.1', ... }` made it a string
   * field at start-up, which threw away the optimized `spawn` and `addRoute` right before the first sessions came).
   */
  addRoute(id: AgentId, host: number, slot: number, tree: CompiledTree, label: string, reload: ReloadPolicy | undefined): void {
    this.version++;
    if (typeof id !== 'string' || !this.ids.set(id, (host << 24) | slot)) {
      if (typeof id === 'string' && !this.routes.has(id)) this.oddIds++;
      this.routes.set(id, (host << 24) | slot);
    }
    if (this.scanner >= 0 && host !== this.scanner) this.scanChanged(id, (host << 24) | slot);
    const shard = this.shards[host]!;
    shard.trees[slot] = tree;
    shard.labels[slot] = label;
    if (reload !== undefined) this.reloads.set(id, reload);
    else if (this.reloads.size > 0) this.reloads.delete(id);
    if (typeof id !== 'number' || id < 0) return;
    if (id >= this.fast.length) {
      // Grow only while ids stay dense, so one agent with id 4,000,000 does not cost 16 MB.
      if (id >= 2 * (this.count + 512)) return;
      let n = Math.max(1024, this.fast.length * 2);
      while (n <= id) n *= 2;
      const fast = new Int32Array(new SharedArrayBuffer(4 * n)).fill(-1);
      fast.set(this.fast);
      this.fast = fast;
    }
    if (this.fast[id]! < 0) this.denseRoutes++;
    this.fast[id] = (host << 24) | slot;
  }

  /** Where agent `id` lives, packed `host << 24 | slot`, or -1 if it is unknown. The hot path of rows and results. */
  locate(id: AgentId): number {
    // A typed array read with a non-integer or out-of-range key gives undefined: `?? -1` covers both.
    const packed = typeof id === 'number' ? (this.fast[id] ?? -1) : -1;
    if (packed >= 0) return packed;
    return this.at(id) ?? -1;
  }

  /**
   * `locate` for the id of row `i` of a snapshot: the row position's memo first. `pastFast`: the caller has already
   * found `id` missing from the dense table, so only the Map is left to ask.
   */
  locateRow(i: number, id: AgentId, pastFast = false): number {
    const memo = this.rowMemo.get(i, id);
    if (memo !== MISS) return memo;
    const at = pastFast ? (this.at(id) ?? -1) : this.locate(id);
    // Unknown ids are not remembered, so a route that comes later needs no forgetting (one that goes does).
    if (at >= 0) this.rowMemo.set(i, id, at);
    return at;
  }

  /** A route the scanner must hear of; past as many changes as routes, it is sent the whole table instead. */
  private scanChanged(id: AgentId, packed: number): void {
    if (this.scanIds.length > this.count + 1024) {
      this.forgetScanner();
      return;
    }
    this.scanIds.push(id);
    this.scanPacked.push(packed);
  }

  /** No worker scans the session alone until `stageRows` picks one again (and sends it the whole table). */
  forgetScanner(): void {
    this.scanner = -1;
    this.scanIds = [];
    this.scanPacked = [];
  }

  removeRoute(id: AgentId): void {
    this.version++;
    this.rowMemo.clear();
    if (this.scanner >= 0) {
      const at = this.at(id);
      if (at !== undefined && at >>> 24 !== this.scanner) this.scanChanged(id, -1);
    }
    if (typeof id !== 'string' || !this.ids.delete(id)) {
      if (this.routes.delete(id) && typeof id === 'string') this.oddIds--;
    }
    if (this.reloads.size > 0) this.reloads.delete(id);
    if (typeof id === 'number' && id >= 0 && id < this.fast.length && this.fast[id]! >= 0) {
      this.fast[id] = -1;
      this.denseRoutes--;
    }
  }
}

/** Routes pack as `host << 24 | slot` in an Int32: at most MAX_HOSTS hosts, MAX_SLOTS agents of a session per host. */
export const MAX_HOSTS = 64;

/**
 * Default PoolOptions.sessionAffinity. Sessions of up to about this many agents stay whole on one worker however
 * they come (whole sessions of 6,250 agents at 50,000 in eight sessions), and the workers differ by at most this
 * many agents because of it.
 */
export const DEFAULT_SESSION_AFFINITY = 8192;

/**
 * Default PoolOptions.spawningMs: a session that has not ticked is taken to grow like the largest session still
 * spawning while it spawned (or was created) less than this long ago. The load generator's game servers send their
 * spawn messages one after another, each once the last is answered: tens to hundreds of milliseconds apart.
 */
export const DEFAULT_SPAWNING_MS = 2000;

/**
 * The last tick reply, kept so that its hidden classes live on: a message's objects get, when it is read, hidden
 * classes that live only as long as some object has them. At a mark-compact with no reply in flight they died,
 * the next reply got new ones, the field types pointing at them changed (the reply's `decisions.logs`, the
 * settled promise's `value`), and `tick` was thrown away ("dependent field type changed"). An array slot: no
 * field type of its own.
 */
const keepShape: unknown[] = [null];

const MAX_SLOTS = 1 << 24;
/** Agents per spawn message to a worker (a worker deserializes 1,000 in about half a millisecond). */
const SPAWN_PART = 1000;
/**
 * Frames of fewer rows are not staged on the workers (stageRows): the main thread checks and routes them itself, where
 * the stage's round trip (two messages, two wake-ups on each side) costs more. Measured at 20 Hz with four sessions
 * (docs/capacity.md, *Round fifteen*): 100 rows a frame, service CPU 9.5–11.0 → 6.4–6.9 µs per agent-tick; about 450
 * rows, even; 900 rows, the stage is ahead.
 */
export const MIN_STAGED_ROWS = 256;

/** An error the caller made (unknown session, misuse); carries a protocol code for the session layer. */
export class PoolUsageError extends Error {
  readonly code: 'E_BAD_FIELD' | 'E_INTERNAL';
  constructor(code: 'E_BAD_FIELD' | 'E_INTERNAL', message: string) {
    super(message);
    this.name = 'PoolUsageError';
    this.code = code;
  }
}

const CANONICAL_INT = /^-?(0|[1-9][0-9]{0,15})$/;

/** Routing and buffering shared by both pools; see AgentPool for each method's contract. */
export abstract class PoolRouter implements AgentPool {
  abstract readonly workerCount: number;
  /** Replaced by `reload`. */
  protected trees: TreeLookup;
  protected readonly logger: PoolLogger | undefined;
  /** Number of hosts: workers, or 1 inline. */
  protected readonly hostCount: number;
  /** Agents per host, every session included (spawn spreads by it). */
  protected readonly load: number[];
  /** False while a host is down (crashed, being replaced): spawns avoid it. */
  protected readonly up: boolean[];
  protected readonly lastTickMs: number[];
  /** PoolOptions.sessionAffinity: how many more agents a session's home may hold than the least loaded worker. */
  protected sessionAffinity = DEFAULT_SESSION_AFFINITY;
  /** PoolOptions.spawningMs (spawningSize). */
  protected spawningMs = DEFAULT_SPAWNING_MS;
  /** PoolOptions.minStagedRows: smaller frames are checked and routed here, not staged on the workers. */
  protected minStagedRows = MIN_STAGED_ROWS;
  onLog: ((event: PoolLogEvent) => void) | null = null;
  private readonly sessions = new Map<string, RouterSession>();
  private nextReq = 1;
  /** The worker the next session staged with sparse or string ids checks its frames on (they take turns). */
  private nextSessionScanner = 0;

  protected constructor(trees: TreeLookup, hostCount: number, logger: PoolLogger | undefined) {
    this.trees = trees;
    this.hostCount = hostCount;
    this.logger = logger;
    this.load = Array.from({ length: hostCount }, () => 0);
    this.up = Array.from({ length: hostCount }, () => true);
    this.lastTickMs = Array.from({ length: hostCount }, () => 0);
  }

  /** Delivers a message that needs no reply. */
  protected abstract post(host: number, msg: ToHost, transfer: ArrayBuffer[]): void;
  /** Delivers a message and resolves with the host's reply (rejects if the host is lost meanwhile). */
  protected abstract request(host: number, msg: HostRequest, transfer: ArrayBuffer[]): Promise<FromHost>;
  /** The world state in the form hosts receive it (the same object inline; bytes cloned once for every worker). */
  protected abstract shareWorld(world: unknown): WorldUpdate;
  /**
   * A snapshot frame as the hosts receive it, read-only from now on (the offsets of its rows stay valid):
   * the frame itself inline; in shared memory for worker threads (copied once, whatever their number).
   */
  protected abstract shareFrame(bytes: Uint8Array): Uint8Array;
  /** Event-loop utilization of a host over the last completed window, 0–1 (elu.ts). */
  protected abstract elu(host: number): number;
  /** True when the hosts check snapshot rows themselves (`stageRows`): worker threads. The inline pool reads them here. */
  protected readonly stagesRows: boolean = false;

  abstract ready(): Promise<void>;
  abstract close(): Promise<void>;
  /** Hands a reload to every host at once: the new library and, per host, the agents to restart (reload.ts). */
  protected abstract installTrees(library: TreeLibrary, restart: ReadonlyArray<Array<[string, number[]]>>): void;

  reload(library: TreeLibrary, changed: ReadonlySet<string>, policy: ReloadPolicy): ReloadOutcome {
    this.trees = library;
    const outcome: ReloadOutcome = new Map();
    const restart: Array<Array<[string, number[]]>> = Array.from({ length: this.hostCount }, () => []);
    for (const s of this.sessions.values()) {
      const counts = new Map<string, { restarted: number; kept: number }>();
      const slots: number[][] = Array.from({ length: this.hostCount }, () => []);
      for (const [id, at] of s.entries()) {
        const r = s.routeAt(id, at);
        const name = r.tree.name;
        if (!changed.has(name)) continue;
        let c = counts.get(name);
        if (c === undefined) counts.set(name, (c = { restarted: 0, kept: 0 }));
        const next = library.get(name);
        if (next === undefined || next.hash === r.tree.hash || (r.reload ?? policy) === 'keep') {
          c.kept++;
          continue;
        }
        // Checks from now on (bb keys) are against the version the agent will run.
        s.shards[r.host]!.trees[r.slot] = next;
        slots[r.host]!.push(r.slot);
        c.restarted++;
      }
      for (let h = 0; h < this.hostCount; h++) if (slots[h]!.length > 0) restart[h]!.push([s.name, slots[h]!]);
      if (counts.size > 0) outcome.set(s.name, counts);
    }
    this.installTrees(library, restart);
    return outcome;
  }

  createSession(session: string, opts: { fields: readonly string[] | null; maxAgents: number; clocked?: boolean }): void {
    if (this.sessions.has(session)) throw new PoolUsageError('E_INTERNAL', `session '${session}' already exists`);
    const fields = opts.fields === null ? null : [...opts.fields];
    if (fields !== null) {
      const seen = new Set<string>();
      for (const f of fields) {
        if (typeof f !== 'string') throw new PoolUsageError('E_BAD_FIELD', 'fields: every field name must be a string');
        // `__proto__` would replace the observation's prototype instead of naming a field.
        if (f === '__proto__') throw new PoolUsageError('E_BAD_FIELD', "fields: '__proto__' is not allowed as a field name");
        if (seen.has(f)) throw new PoolUsageError('E_BAD_FIELD', `fields: '${f}' is listed twice`);
        seen.add(f);
      }
    }
    const s = new RouterSession(session, fields, opts.maxAgents, this.hostCount);
    s.clocked = opts.clocked === true;
    this.sessions.set(session, s);
  }

  destroySession(session: string): void {
    const s = this.sessions.get(session);
    if (s === undefined) return;
    this.sessions.delete(session);
    for (let h = 0; h < this.hostCount; h++) {
      this.load[h]! -= s.shards[h]!.count;
      if (this.up[h]) this.post(h, { t: 'drop', session }, []);
    }
  }

  exportSession(session: string): Promise<SessionExport> {
    const s = this.session(session);
    const metas: Array<Array<[number, number, ReloadPolicy | null]>> = Array.from({ length: this.hostCount }, () => []);
    for (const [id, at] of s.entries()) {
      const host = at >>> 24;
      const slot = at & 0xffffff;
      metas[host]!.push([slot, s.shards[host]!.ordinals[slot]!, s.reloads.get(id) ?? null]);
    }
    const parts: Array<Promise<SessionExport['parts'][number]>> = [];
    for (let h = 0; h < this.hostCount; h++) {
      if (s.shards[h]!.count === 0) continue;
      const meta = metas[h]!;
      parts.push(
        this.request(h, { t: 'checkpoint', req: this.nextReq++, session }, []).then((reply) => {
          if (reply.t !== 'checkpointed') throw new Error(`host ${h} did not answer the checkpoint request (${reply.t})`);
          return { bytes: reply.bytes, agents: reply.agents, meta };
        }),
      );
    }
    const world = s.world;
    const nextOrdinal = s.nextOrdinal;
    return Promise.all(parts).then((done) => ({ v: 1 as const, nextOrdinal, world, parts: done }));
  }

  importSession(session: string, opts: { fields: readonly string[] | null; maxAgents: number }, exported: SessionExport): void {
    if (exported.v !== 1) throw new PoolUsageError('E_INTERNAL', `unsupported session export version ${String(exported.v)}`);
    // Unpacked here (the main thread has the same compiled trees as the hosts) and packed again per new host.
    const restored: Array<{ agent: Agent; ordinal: number; reload: ReloadPolicy | null; lod: [number, number, number] | null }> = [];
    // Level of detail moves with each agent; every host ticked the session's same ticks, so one `previous`.
    let previous = Number.NaN;
    for (const part of exported.parts) {
      const meta = new Map(part.meta.map((m) => [m[0], m]));
      const unpacked = unpackAgents(part.bytes, opts.fields, this.trees);
      if (!Number.isNaN(unpacked.previous)) previous = unpacked.previous;
      for (const [slot, agent] of unpacked.agents) {
        const m = meta.get(slot);
        if (m === undefined) throw new PoolUsageError('E_INTERNAL', `session export: no routing entry for slot ${slot}`);
        restored.push({ agent, ordinal: m[1], reload: m[2], lod: unpacked.lod === null ? null : unpacked.lod.stateOf(slot) });
      }
    }
    restored.sort((a, b) => a.ordinal - b.ordinal);
    this.createSession(session, opts);
    const s = this.session(session);
    const perHost: Array<Array<Agent | null>> = Array.from({ length: this.hostCount }, () => []);
    const lodPerHost: Array<Array<[number, Agent, [number, number, number] | null]> | null> = Array.from({ length: this.hostCount }, () => null);
    for (const { agent, ordinal, reload, lod } of restored) {
      const host = this.place(s);
      if (host < 0) throw new PoolUsageError('E_INTERNAL', 'no worker is available to host the restored agents');
      const slot = s.shards[host]!.allocate(agent.id, ordinal);
      this.load[host]!++;
      s.addRoute(agent.id, host, slot, agent.tree, agent.label, reload ?? undefined);
      const list = perHost[host]!;
      while (list.length < slot) list.push(null);
      list[slot] = agent;
      (lodPerHost[host] ??= []).push([slot, agent, lod]);
    }
    s.nextOrdinal = exported.nextOrdinal;
    s.world = exported.world;
    for (let h = 0; h < this.hostCount; h++) {
      if (perHost[h]!.length === 0) continue;
      const bytes = packAgents(perHost[h]!, s.fields, exported.world, movedLod(lodPerHost[h] ?? [], previous), previous);
      this.post(h, { t: 'restore', session, fields: s.fields, bytes, count: s.shards[h]!.count }, []);
      s.shards[h]!.worldSent = s.worldVersion;
    }
  }

  spawn(session: string, entries: readonly SpawnEntry[], more = 0): { ids: AgentId[]; errors: EntryError[] } {
    const s = this.session(session);
    const ids: AgentId[] = [];
    const errors: EntryError[] = [];
    // What the other sessions still spawning will bring to each worker (placed in turns with this one: `place`).
    s.spawnedAt = performance.now();
    const coming = this.coming(s);
    s.remaining = entries.length + more;
    // Per worker, its messages of SPAWN_PART agents at most (a worker reads each in one go before it can look at
    // another session's tick), packed (spawns.ts).
    const parts: SpawnBatchBuilder[][] = Array.from({ length: this.hostCount }, () => []);
    const room = Math.min(SPAWN_PART, entries.length);
    // The previous entry's tree name and tree: a spawn mostly repeats one tree, and a name compared is cheaper than
    // one looked up (the decoder makes a new string per entry, hashed again by every Map lookup).
    let lastName: string | null = null;
    let lastTree: CompiledTree | undefined;
    for (const e of entries) {
      s.remaining--;
      const id = (e as Partial<SpawnEntry> | null)?.id;
      if (!isAgentId(id)) {
        errors.push({ id: null, code: 'E_BAD_FIELD', message: 'id: must be an integer or a string' });
        continue;
      }
      const bad = badSpawnField(e);
      if (bad !== null) {
        errors.push({ id, code: 'E_BAD_FIELD', message: bad });
        continue;
      }
      if (e.tree !== lastName) {
        lastName = e.tree;
        lastTree = this.trees.get(e.tree);
      }
      const tree = lastTree;
      if (tree === undefined) {
        errors.push({ id, code: 'E_UNKNOWN_TREE', message: Msg.unknownTree(e.tree) });
        continue;
      }
      if (s.at(id) !== undefined) {
        errors.push({ id, code: 'E_DUPLICATE_AGENT', message: Msg.duplicateAgent(id) });
        continue;
      }
      const key = e.bb === undefined ? null : undeclaredKey(tree, e.bb);
      if (key !== null) {
        errors.push({ id, code: 'E_UNKNOWN_KEY', message: Msg.unknownKey(key, e.tree) });
        continue;
      }
      if (s.count >= s.maxAgents) {
        errors.push({ id, code: 'E_LIMIT', message: Msg.limit('agents in this session', s.maxAgents) });
        continue;
      }
      const host = this.place(s, coming);
      if (host < 0) {
        errors.push({ id, code: 'E_LIMIT', message: 'no worker is available to host the agent' });
        continue;
      }
      if (s.shards[host]!.count >= MAX_SLOTS) {
        errors.push({ id, code: 'E_LIMIT', message: `a worker hosts at most ${MAX_SLOTS} agents of one session` });
        continue;
      }
      const slot = s.shards[host]!.allocate(id, s.nextOrdinal++);
      this.load[host]!++;
      const label = e.label ?? '';
      s.addRoute(id, host, slot, tree, label, e.reload);
      const own = parts[host]!;
      let part = own[own.length - 1];
      if (part === undefined || part.full) own.push((part = new SpawnBatchBuilder(room)));
      part.add(slot, id, e.tree, label, e.seed ?? null, e.bb ?? null, e.every ?? 1);
      ids.push(id);
    }
    for (let h = 0; h < this.hostCount; h++) {
      for (const part of parts[h]!) this.post(h, { t: 'spawn', session, fields: s.fields, agents: part.build() }, []);
    }
    s.remaining = more;
    return { ids, errors };
  }

  despawn(session: string, ids: readonly AgentId[]): { ids: AgentId[]; errors: EntryError[] } {
    const s = this.session(session);
    const done: AgentId[] = [];
    const errors: EntryError[] = [];
    const slots: number[][] = Array.from({ length: this.hostCount }, () => []);
    for (const id of ids) {
      const at = s.at(id);
      if (at === undefined) {
        errors.push(unknownAgent(id));
        continue;
      }
      const host = at >>> 24;
      s.removeRoute(id);
      s.shards[host]!.release(at & 0xffffff);
      this.load[host]!--;
      slots[host]!.push(at & 0xffffff);
      done.push(id);
    }
    for (let h = 0; h < this.hostCount; h++) {
      if (slots[h]!.length > 0) this.post(h, { t: 'despawn', session, slots: slots[h]! }, []);
    }
    return { ids: done, errors };
  }

  setBlackboard(session: string, entries: ReadonlyArray<readonly [AgentId, Record<string, unknown>]>): EntryError[] {
    const s = this.session(session);
    const errors: EntryError[] = [];
    for (const entry of entries) {
      const [id, values] = entry;
      const at = s.at(id);
      if (at === undefined) {
        errors.push(unknownAgent(id));
        continue;
      }
      if (values === null || typeof values !== 'object' || Array.isArray(values)) {
        errors.push({ id, code: 'E_BAD_FIELD', message: 'bb values: must be a map of key → value' });
        continue;
      }
      const shard = s.shards[at >>> 24]!;
      const slot = at & 0xffffff;
      const tree = shard.trees[slot]!;
      const key = undeclaredKey(tree, values);
      if (key !== null) {
        errors.push({ id, code: 'E_UNKNOWN_KEY', message: Msg.unknownKey(key, tree.name) });
        continue;
      }
      shard.pushBlackboard(slot, values);
    }
    return errors;
  }

  observe(
    session: string,
    agents: ReadonlyArray<readonly unknown[]> | Readonly<Record<string, Record<string, unknown>>> | PackedRows,
    full: boolean,
  ): { unknown: number } {
    const s = this.session(session);
    s.playing = true;
    const shards = s.shards;
    if (s.readPending) {
      // Rows of earlier frames wait in the workers' spares: they become the observations before these rows land.
      s.readPending = false;
      for (let h = 0; h < shards.length; h++) if (shards[h]!.count > 0 && this.up[h]) this.post(h, { t: 'settle', session }, []);
    }
    if (full) for (let h = 0; h < shards.length; h++) shards[h]!.startFull();
    let unknown = 0;
    if (isPackedRows(agents)) {
      if (s.fields === null || agents.width !== s.fields.length) {
        throw new PoolUsageError('E_BAD_FIELD', 'agents: packed rows must have one value per declared field');
      }
      if (agents.kind === 'staged') {
        // Routes came or went since the hosts looked: the rows are routed here, as if they had never been staged.
        if (agents.version !== s.version) return this.observe(session, stagedAsFrameRows(agents), false);
        // The hosts found their rows: each list goes into its shard as it is (a copy of 8 bytes a row, no row read).
        for (let k = 0; k < agents.kept.length; k++) {
          const part = agents.kept[k]!;
          const shard = shards[part.host]!;
          const b = shard.startFrame(agents.frame, part.count);
          b.slots.set(part.slots.subarray(0, part.count), b.count);
          b.offsets.set(part.offsets.subarray(0, part.count), b.count);
          b.count += part.count;
          shard.endFrame();
        }
        return { unknown: agents.unknown };
      }
      const ids = agents.ids;
      if (agents.kind === 'frame') {
        // Rows left in their frame: each goes to its agent's host as (slot, offset); the host decodes the values.
        const frame = this.shareFrame(agents.bytes);
        const offsets = agents.offsets;
        const count = agents.count;
        // Room for every row made up front, so the loop below is locate (inline for dense integer ids) and two
        // stores: a call per row to `locate` and to the shard was a quarter of the main thread's tick path.
        const batches = shards.map((shard) => (shard.count > 0 ? shard.startFrame(frame, count) : null));
        const fast = s.fast;
        for (let i = 0; i < count; i++) {
          const id = ids[i]!;
          let at = typeof id === 'number' ? (fast[id] ?? -1) : -1;
          if (at < 0) at = s.locateRow(i, id, true);
          if (at < 0) {
            unknown++;
            continue;
          }
          const b = batches[at >>> 24]!;
          const j = b.count;
          b.slots[j] = at & 0xffffff;
          b.offsets[j] = offsets[i]!;
          b.count = j + 1;
        }
        for (let h = 0; h < shards.length; h++) if (batches[h] !== null) shards[h]!.endFrame();
        return { unknown };
      }
      for (let i = 0; i < agents.count; i++) {
        const at = s.locateRow(i, ids[i]!);
        if (at < 0) unknown++;
        else shards[at >>> 24]!.pushPacked(at & 0xffffff, agents, i);
      }
    } else if (Array.isArray(agents)) {
      const rows = agents as ReadonlyArray<readonly unknown[]>;
      if (s.fields === null && rows.length > 0) throw new PoolUsageError('E_BAD_FIELD', 'agents: positional rows need `fields` declared in hello');
      for (let i = 0; i < rows.length; i++) {
        const row = rows[i]!;
        const at = s.locateRow(i, row[0] as AgentId);
        if (at < 0) unknown++;
        else shards[at >>> 24]!.pushRow(at & 0xffffff, row);
      }
    } else {
      const map = agents as Readonly<Record<string, Record<string, unknown>>>;
      for (const key of Object.keys(map)) {
        // Map keys are strings on the wire; an integer key also names the numeric id.
        const at = s.at(key) ?? (CANONICAL_INT.test(key) ? s.at(Number(key)) : undefined);
        if (at === undefined) unknown++;
        else shards[at >>> 24]!.pushObject(at & 0xffffff, map[key]!);
      }
    }
    return { unknown };
  }

  /**
   * Rows the main thread does not read (docs/capacity.md): the snapshot frame's `count` rows of `width` values, from
   * byte `start` to the frame's end, go in shared memory to every host with agents of the session; each checks them
   * all as the protocol's fast path does and lists its own agents' rows. Resolves with the rows for `observe` when
   * every host passed them, or null when they failed the check (every host gives the same verdict) or a host could
   * not answer: the caller then reads the frame the ordinary way (parseClientFrame), which gives what it always gave.
   * Returns null at once where this path does not apply: the inline pool, a host of the session down, no host
   * holding agents of it, rows of another width than the session's fields.
   */
  stageRows(session: string, bytes: Uint8Array, start: number, count: number, width: number): Promise<StagedRows | null> | null {
    // A small frame's rows cost the main thread less to check and route than a round trip to a worker does.
    if (!this.stagesRows || count < this.minStagedRows) return null;
    const s = this.sessions.get(session);
    if (s === undefined || s.fields === null || s.fields.length !== width) return null;
    const hosts: number[] = [];
    for (let h = 0; h < this.hostCount; h++) {
      if (s.shards[h]!.count === 0) continue;
      if (!this.up[h]) return null;
      hosts.push(h);
    }
    if (hosts.length === 0) return null;
    const frame = this.shareFrame(bytes);
    const version = s.version;
    // Where every id routed is a small integer in `fast` (shared memory), one worker checks the rows and finds every
    // worker's, in turn, instead of each worker scanning every row. Other ids (sparse, strings): one worker per
    // session, which holds the other workers' routes (RoutesOrder), sent the changes right before the order.
    const routes = hosts.length > 1 && s.denseRoutes === s.count ? s.fast : null;
    let asked = hosts;
    let scan: StageOrder['scan'] = null;
    if (routes !== null) asked = [hosts[s.nextScanner++ % hosts.length]!];
    else if (hosts.length > 1) {
      asked = [this.scannerOf(s, hosts)];
      scan = { hosts: this.hostCount };
    }
    const replies = asked.map((host) => {
      const order: StageOrder = { t: 'stage', req: this.nextReq++, session, frame, start, count, width, host, all: routes === null ? null : { routes, hosts: this.hostCount }, scan };
      return this.request(host, order, []);
    });
    return Promise.all(replies).then(
      (answers) => {
        const kept: StagedPart[] = [];
        let known = 0;
        for (const a of answers) {
          if (a.t !== 'staged' || !a.ok) return null;
          for (const part of a.parts) {
            known += part.count;
            kept.push(part);
          }
        }
        return { kind: 'staged', count, width, start, bytes, frame, kept, unknown: count - known, version };
      },
      () => null,
    );
  }

  /**
   * The worker that checks session `s`'s frames alone (one of `hosts`, which hold its agents), its table of the
   * other workers' routes brought up to date: the whole table when it is new to the job, else the changes since.
   * Sessions are spread over the workers as they are first staged.
   */
  private scannerOf(s: RouterSession, hosts: readonly number[]): number {
    if (s.scanner < 0 || !hosts.includes(s.scanner)) {
      const scanner = hosts[this.nextSessionScanner++ % hosts.length]!;
      s.forgetScanner();
      s.scanner = scanner;
      const ids: AgentId[] = [];
      const packed: number[] = [];
      for (const [id, at] of s.entries()) {
        if (at >>> 24 === scanner) continue;
        ids.push(id);
        packed.push(at);
      }
      this.post(scanner, { t: 'routes', session: s.name, reset: true, ids, packed: Int32Array.from(packed) }, []);
    } else if (s.scanIds.length > 0) {
      this.post(s.scanner, { t: 'routes', session: s.name, reset: false, ids: s.scanIds, packed: Int32Array.from(s.scanPacked) }, []);
      s.scanIds = [];
      s.scanPacked = [];
    }
    return s.scanner;
  }

  /** Worker `host` was replaced (its state is gone): sessions it scanned alone pick a worker again, and send it everything. */
  protected forgetScans(host: number): void {
    for (const s of this.sessions.values()) if (s.scanner === host) s.forgetScanner();
  }

  setWorld(session: string, world: unknown): void {
    const s = this.session(session);
    s.playing = true;
    s.world = world;
    s.worldVersion++;
  }

  lod(session: string, entries: ReadonlyArray<readonly [AgentId, number]>): EntryError[] {
    const s = this.session(session);
    const errors: EntryError[] = [];
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i]!;
      const id = entry[0];
      const at = s.locate(id);
      if (at < 0) {
        errors.push(unknownAgent(id));
        continue;
      }
      const bad = badEvery(entry[1]);
      if (bad !== null) {
        errors.push({ id, code: 'E_BAD_FIELD', message: `every: ${bad}` });
        continue;
      }
      s.shards[at >>> 24]!.pushLod(at & 0xffffff, entry[1]);
    }
    return errors;
  }

  results(session: string, results: ResultList): EntryError[] {
    const s = this.session(session);
    s.playing = true;
    const errors: EntryError[] = [];
    if (results instanceof ResultColumns) {
      // Read by the fast path: every entry well-formed, only the ids to look up.
      const { ids, seqs, ok } = results;
      // Routes found with the ids when the frame was read, if none came or went since.
      const filed = results.version === s.version ? results.filed : null;
      for (let i = 0; i < results.count; i++) {
        const id = ids[i]!;
        const known = filed === null ? -1 : filed[i]!;
        const at = known >= 0 ? known : s.locate(id);
        if (at < 0) errors.push(unknownAgent(id));
        else s.shards[at >>> 24]!.pushResult(at & 0xffffff, seqs[i]!, ok[i] === 1);
      }
      return errors;
    }
    for (let i = 0; i < results.length; i++) {
      // Indexed reads, not `const [id, seq, status] = entry`: destructuring goes through the array iterator.
      const entry = results[i]!;
      const id = entry[0];
      const seq = entry[1];
      const status = entry[2];
      const at = s.locate(id);
      if (at < 0) {
        errors.push(unknownAgent(id));
        continue;
      }
      if (typeof seq !== 'number' || (status !== 'success' && status !== 'failure')) {
        errors.push({ id, code: 'E_BAD_FIELD', message: "results: each entry is [id, seq, 'success' | 'failure']" });
        continue;
      }
      s.shards[at >>> 24]!.pushResult(at & 0xffffff, seq, status === 'success');
    }
    return errors;
  }

  async tick(session: string, tick: number, time: number, dt: number, basedOn: number): Promise<Decisions> {
    return (await this.tickWith(this.session(session), tick, time, dt, basedOn, -1, null))!.decisions;
  }

  tickFrame(session: string, tick: number, time: number, dt: number, basedOn: number, frame: UnreadFrame): Promise<FrameTick | null> | null {
    if (!this.stagesRows) return null;
    const s = this.sessions.get(session);
    if (s === undefined || s.ticking || s.fields === null || s.fields.length !== frame.width) return null;
    s.playing = true;
    const host = this.soleHost(s);
    if (host < 0) return null;
    // Cloned before any input is taken: a world that cannot be cloned is left to the ordinary path, which refuses it.
    let world: WorldUpdate | null = null;
    if (frame.world !== undefined) {
      try {
        world = this.shareWorld(frame.world);
      } catch {
        return null;
      }
    }
    const resultsFrom = s.shards[host]!.resultCount;
    // Results the reader checked and left in the frame (at the same offsets in the shared copy) are the host's to
    // read: neither read, nor routed, nor copied here. Any others are routed here, as ever.
    const results = frame.results;
    const inFrame = results instanceof ResultColumns && results.frame === frame.bytes ? results.start : -1;
    const errors = results === undefined || inFrame >= 0 ? [] : this.results(session, results);
    const stage: TickStage = { frame: this.shareFrame(frame.bytes), start: frame.start, count: frame.count, width: frame.width, resultsFrom, frameResults: inFrame, world };
    return this.tickWith(s, tick, time, dt, basedOn, host, stage).then((ticked) => {
      if (ticked === null) return null;
      if (frame.world !== undefined) {
        s.world = frame.world;
        s.shards[host]!.worldSent = ++s.worldVersion;
      }
      if (ticked.unknownResults !== null) for (const id of ticked.unknownResults) errors.push(unknownAgent(id));
      return { decisions: ticked.decisions, errors, unknown: ticked.unknown };
    });
  }

  readFrame(session: string, bytes: Uint8Array, start: number, count: number, width: number): Promise<{ unknown: number } | null> | null {
    // A small frame's rows cost the main thread less to check and route than the round trip to a worker does.
    if (!this.stagesRows || count < this.minStagedRows) return null;
    const s = this.sessions.get(session);
    if (s === undefined || s.fields === null || s.fields.length !== width) return null;
    // Rows read here wait for the next tick order: a frame read on the worker now would land before them.
    if (s.shards.some((shard) => shard.hasObservations)) return null;
    const host = this.soleHost(s);
    if (host < 0) return null;
    s.playing = true;
    s.readPending = true;
    const order: ReadOrder = { t: 'read', req: this.nextReq++, session, frame: this.shareFrame(bytes), start, count, width };
    return this.request(host, order, []).then(
      (reply) => (reply.t === 'rowsRead' && reply.ok ? { unknown: reply.unknown } : null),
      () => null,
    );
  }

  /** The live host holding every agent of session `s`, or -1 (none holds any, several do, or the one that does is down). */
  private soleHost(s: RouterSession): number {
    let host = -1;
    for (let h = 0; h < this.hostCount; h++) {
      if (s.shards[h]!.count === 0) continue;
      if (host >= 0 || !this.up[h]) return -1;
      host = h;
    }
    return host;
  }

  /**
   * Sends each host its tick order; `stage`, when not null, rides on host `stageHost`'s (which holds every agent of
   * the session). Resolves with the decisions and how many of the stage's rows named no agent, or with null when
   * that host refused the stage: nothing of its frame applied, nothing ticked.
   */
  private async tickWith(
    s: RouterSession,
    tick: number,
    time: number,
    dt: number,
    basedOn: number,
    stageHost: number,
    stage: TickStage | null,
  ): Promise<{ decisions: Decisions; unknown: number; unknownResults: AgentId[] | null } | null> {
    const session = s.name;
    if (s.ticking) throw new PoolUsageError('E_INTERNAL', `session '${session}': tick ${tick} started before the previous tick ended`);
    s.ticking = true;
    if (s.playing || !s.clocked) s.ticked = true;
    try {
      const pending: Array<Promise<FromHost>> = [];
      const hosts: number[] = [];
      // Cloned once, before any input is taken: a world that cannot be cloned fails the tick with nothing lost.
      let update: WorldUpdate | null = null;
      for (let h = 0; h < this.hostCount; h++) {
        const shard = s.shards[h]!;
        if (shard.count > 0 && this.up[h] && shard.worldSent !== s.worldVersion) update ??= this.shareWorld(s.world);
      }
      for (let h = 0; h < this.hostCount; h++) {
        const shard = s.shards[h]!;
        if (shard.count === 0 || !this.up[h]) {
          shard.discard();
          continue;
        }
        let world: WorldUpdate | null = null;
        if (shard.worldSent !== s.worldVersion) {
          world = update;
          shard.worldSent = s.worldVersion;
        }
        const input = shard.take();
        const order: TickOrder = { t: 'tick', req: this.nextReq++, session, time, dt, ...input, world, tick };
        if (h === stageHost) order.stage = stage;
        pending.push(this.request(h, order, transferList(input.rows, input.results, input.frameRows)));
        hosts.push(h);
      }
      s.readPending = false; // the tick swaps in what the workers read
      const settled = await Promise.allSettled(pending);
      let unknown = 0;
      let unknownResults: AgentId[] | null = null;
      const staged = stage === null ? undefined : settled[hosts.indexOf(stageHost)];
      if (staged !== undefined && staged.status === 'fulfilled') {
        const reply = staged.value as TickReply;
        if (reply.refused === true) {
          this.lastTickMs[stageHost] = reply.ms;
          s.shards[stageHost]!.recycle(reply.rows, reply.results, reply.frameRows);
          return null;
        }
        unknown = reply.unknown ?? 0;
        unknownResults = reply.unknownResults ?? null;
      }
      const parts: DecisionLists[] = s.carried;
      s.carried = [];
      let frames: WatchedFrame[] | null = null;
      let failure: unknown = null;
      const logs: Array<{ logs: LogColumns; agent: LogAgentLookup }> = [];
      for (let k = 0; k < settled.length; k++) {
        const r = settled[k]!;
        const h = hosts[k]!;
        if (r.status === 'rejected') {
          failure ??= r.reason;
          continue;
        }
        const reply = r.value as TickReply;
        const shard = s.shards[h]!;
        this.lastTickMs[h] = reply.ms;
        parts.push({ columns: shard.decisions(reply.decisions), ids: shard.ids, ordinals: shard.ordinals, slotsInSpawnOrder: shard.slotsInSpawnOrder });
        if (reply.frames !== null && reply.frames !== undefined) {
          frames ??= [];
          for (const [slot, frame] of reply.frames) frames.push({ agent: shard.ids[slot]!, frame });
        }
        keepShape[0] = reply; // see keepShape
        const l = reply.decisions.logs;
        if (l !== null) logs.push({ logs: l, agent: (slot) => this.logAgent(s, shard.ids[slot]) });
        shard.recycle(reply.rows, reply.results, reply.frameRows);
      }
      if (logs.length > 0) emitLogs(this.logger, this.onLog, session, tick, logs);
      if (failure !== null) {
        s.carried = keepParts(parts);
        throw failure instanceof Error ? failure : new Error(String(failure));
      }
      if (frames !== null) this.deliverFrames(session, frames);
      const lost = s.lost;
      s.lost = [];
      return { decisions: mergeDecisions(tick, basedOn, parts, lost), unknown, unknownResults };
    } finally {
      s.ticking = false;
    }
  }

  listAgents(session: string): AgentListing[] {
    const s = this.session(session);
    const list: AgentListing[] = [];
    for (const [id, at] of s.entries()) {
      const r = s.routeAt(id, at);
      list.push({ id, tree: r.tree.name, label: r.label, worker: r.host });
    }
    return list;
  }

  async inspectAgent(session: string, id: AgentId): Promise<AgentView | null> {
    const s = this.session(session);
    const r = s.route(id);
    if (r === undefined) return null;
    const reply = await this.request(r.host, { t: 'inspect', req: this.nextReq++, session, slot: r.slot }, []);
    return reply.t === 'inspected' ? reply.inspection : null;
  }

  agentCount(session?: string): number {
    if (session !== undefined) return this.sessions.get(session)?.count ?? 0;
    let n = 0;
    for (const l of this.load) n += l;
    return n;
  }

  workerStats(): WorkerStats[] {
    return this.load.map((agents, worker) => {
      const threadId = this.threadId(worker);
      return { worker, agents, elu: this.elu(worker), lastTickMs: this.lastTickMs[worker]!, ...(threadId !== undefined ? { threadId } : {}) };
    });
  }

  /** Host `worker`'s thread id in the OS, where it has a thread of its own (WorkerPool). */
  protected threadId(_worker: number): number | undefined {
    return undefined;
  }

  onFrames: ((session: string, frames: WatchedFrame[]) => void) | null = null;

  // The inspector's calls: each goes to the one host holding the agent. Unknown sessions read as unknown agents.
  async watch(session: string, agent: AgentId, ticks: number): Promise<boolean> {
    if (!Number.isFinite(ticks) || ticks < 1) throw new RangeError(`watch: ticks must be a number ≥ 1, got ${ticks}`);
    const r = this.sessions.get(session)?.route(agent);
    if (r === undefined || !this.up[r.host]) return false;
    const reply = await this.request(r.host, { t: 'watch', req: this.nextReq++, session, slot: r.slot, ticks }, []);
    return reply.t === 'watching' && reply.ok;
  }

  unwatch(session: string, agent: AgentId): Promise<void> {
    const r = this.sessions.get(session)?.route(agent);
    if (r !== undefined && this.up[r.host]) this.post(r.host, { t: 'unwatch', session, slot: r.slot }, []);
    return Promise.resolve();
  }

  async frames(session: string, agent: AgentId, sinceTick?: number): Promise<AgentFrame[]> {
    const r = this.sessions.get(session)?.route(agent);
    if (r === undefined || !this.up[r.host]) return [];
    const reply = await this.request(r.host, { t: 'frames', req: this.nextReq++, session, slot: r.slot, since: sinceTick ?? null }, []);
    return reply.t === 'frames' ? reply.frames : [];
  }

  async why(session: string, agent: AgentId, tick: number): Promise<WhyReport | null> {
    const r = this.sessions.get(session)?.route(agent);
    if (r === undefined || !this.up[r.host]) return null;
    const reply = await this.request(r.host, { t: 'why', req: this.nextReq++, session, slot: r.slot, tick }, []);
    return reply.t === 'why' ? reply.report : null;
  }

  /**
   * Inspector control: node `node` of watched agent `agent` returns `status` (1 success, 2 failure, 3 running;
   * null: runs normally) from its next tick on. False when the agent is not watched or the node is unknown.
   */
  async force(session: string, agent: AgentId, node: number, status: 1 | 2 | 3 | null): Promise<boolean> {
    const r = this.sessions.get(session)?.route(agent);
    if (r === undefined || !this.up[r.host]) return false;
    const reply = await this.request(r.host, { t: 'force', req: this.nextReq++, session, slot: r.slot, node, status }, []);
    return reply.t === 'forced' && reply.ok;
  }

  /** Hands a tick's frames to onFrames; a listener that throws is logged, never fails the tick. */
  private deliverFrames(session: string, frames: WatchedFrame[]): void {
    const listener = this.onFrames;
    if (listener === null) return;
    try {
      listener(session, frames);
    } catch (err) {
      this.logger?.error({ err, session }, 'onFrames listener threw');
    }
  }

  /** Where agent `id` of `session` lives (host, slot), or undefined. */
  protected locateAgent(session: string, id: AgentId): { host: number; slot: number } | undefined {
    const at = this.sessions.get(session)?.at(id);
    return at === undefined ? undefined : { host: at >>> 24, slot: at & 0xffffff };
  }

  /** The agent a log line names, as the routing table knows it (its id's route: label and tree). */
  private logAgent(s: RouterSession, id: AgentId | undefined): ReturnType<LogAgentLookup> {
    if (id === undefined) return null;
    const r = s.route(id);
    return { id, label: r?.label ?? '', tree: r?.tree ?? null };
  }

  /** Request ids for subclasses' own requests. */
  protected nextRequestId(): number {
    return this.nextReq++;
  }

  /**
   * A host died with its agents: forget them, and report each once, with its session's next tick, as lost.
   * The host's shards start over (a replacement host knows nothing).
   */
  protected loseHost(host: number): number {
    this.forgetScans(host);
    let lost = 0;
    for (const s of this.sessions.values()) {
      for (const [id, at] of s.entries()) {
        if (at >>> 24 !== host) continue;
        s.removeRoute(id);
        s.lost.push([id, 'E_INTERNAL', 'agent lost: worker crashed']);
        lost++;
      }
      s.shards[host] = new SessionShard(s.fields?.length ?? 0);
      s.version++;
    }
    this.load[host] = 0;
    return lost;
  }

  knownIds(session: string): KnownIds | null {
    return this.sessions.get(session) ?? null;
  }

  private session(name: string): RouterSession {
    const s = this.sessions.get(name);
    if (s === undefined) throw new PoolUsageError('E_INTERNAL', `no session '${name}'`);
    return s;
  }

  /**
   * The host of a new agent of session `s`: the session's home while it would then hold at most `sessionAffinity`
   * agents more than the least loaded host, else the least loaded; -1 when no host is up. A session on one worker
   * ticks with one round trip to it (and, staged, one more) instead of one per worker plus the stage, and its
   * decisions need no merge (docs/capacity.md, "Round thirteen").
   */
  private place(s: RouterSession, coming: readonly number[] | null = null): number {
    const least = this.leastLoaded();
    if (least < 0 || this.sessionAffinity <= 0) return least;
    if (s.home < 0 || !this.up[s.home]) s.home = this.homeFor(s);
    // The least loaded worker's share of the other sessions' agents still to come counts as there already: game
    // servers of more than `sessionAffinity` agents each that spawn in turns stay whole (the first need not spill
    // only because the others' turns have not come yet).
    return this.load[s.home]! - this.load[least]! - (coming === null ? 0 : coming[least]!) < this.sessionAffinity ? s.home : least;
  }

  /**
   * Per worker, the agents the sessions other than `s` will still bring, as homeFor counts them: a session without a
   * home yet (its game server's spawn not begun) on the least loaded worker, where it will go; null where placement
   * does not look (no session affinity).
   */
  private coming(s: RouterSession): number[] | null {
    if (this.sessionAffinity <= 0) return null;
    const coming = Array.from({ length: this.hostCount }, () => 0);
    const least = this.leastLoaded();
    const now = performance.now();
    const size = this.spawningSize(now);
    for (const other of this.sessions.values()) {
      if (other === s) continue;
      const home = other.home >= 0 ? other.home : least;
      if (home >= 0) coming[home]! += this.stillComing(other, size, now);
    }
    return coming;
  }

  /**
   * The agents a session not playing yet (`ticked`) will still bring, for placement: those of a spawn in parts still
   * to come, and at least up to `size` in all (spawningSize: those it has, or more) while it is spawning, else up to
   * `sessionAffinity`; 0 once it has ticked.
   */
  private stillComing(s: RouterSession, size: number, now: number): number {
    if (s.ticked) return 0;
    return Math.max(0, (this.spawning(s, now) ? size : this.sessionAffinity) - s.count, s.remaining);
  }

  /** Whether `s` spawned (or was created) less than `spawningMs` ago, or is placing a spawn in parts. */
  private spawning(s: RouterSession, now: number): boolean {
    return s.remaining > 0 || now - s.spawnedAt < this.spawningMs;
  }

  /**
   * What each session still spawning is taken to become: the largest of them so far (the agents it has and those of
   * a spawn in parts still to come), at least `sessionAffinity`. Game servers that start together are alike, and
   * spawn in several messages each: reserving only `sessionAffinity` for each, two sessions of one worker that sent
   * all their messages first ran more than `sessionAffinity` ahead of the other worker's (which had 8,192 each and
   * counted as done) and spilled: three fixed-mode runs of 100,000 in twelve split one or two sessions, whose rows
   * then went back to the main thread (docs/capacity.md, *Round twenty-seven*). Only sessions that spawned (or were
   * created) less than `spawningMs` ago count so: a quiet one that has not ticked (a game server that spawned its NPCs
   * and waits for players) keeps the reservation of `sessionAffinity`, or a smaller session would hold room for a
   * larger one's size on its worker for as long as it stays quiet.
   */
  private spawningSize(now: number): number {
    let size = this.sessionAffinity;
    for (const s of this.sessions.values()) if (!s.ticked && this.spawning(s, now)) size = Math.max(size, s.count + s.remaining);
    return size;
  }

  /**
   * The home of a session's first agents: the live worker with the fewest agents, where each other session that has
   * not ticked yet counts as if it had as many as the largest of them already (spawningSize; at least
   * `sessionAffinity`), and the rest of a spawn it is placing in parts (stillComing). Game servers that start together
   * spawn in turns (messages of 1,000 to 5,000 agents): counting only the agents placed so far sent three of four
   * 12,500-agent sessions home to the same worker, which then ran `sessionAffinity` ahead and split them all
   * (docs/capacity.md, *Round sixteen*). A session that has ticked counts as the agents it has.
   */
  private homeFor(s: RouterSession): number {
    const load = this.load.slice();
    const now = performance.now();
    const size = this.spawningSize(now);
    for (const other of this.sessions.values()) {
      if (other === s || other.home < 0) continue;
      load[other.home]! += this.stillComing(other, size, now);
    }
    let best = -1;
    for (let h = 0; h < this.hostCount; h++) {
      if (this.up[h] && (best < 0 || load[h]! < load[best]!)) best = h;
    }
    return best;
  }

  /** The live host with the fewest agents (lowest number on ties), or -1. */
  private leastLoaded(): number {
    let best = -1;
    for (let h = 0; h < this.hostCount; h++) {
      if (this.up[h] && (best < 0 || this.load[h]! < this.load[best]!)) best = h;
    }
    return best;
  }
}

/** The first wrongly typed optional field of a spawn entry, as a message, or null. */
function badSpawnField(e: SpawnEntry): string | null {
  if (typeof e.tree !== 'string') return 'tree: must be a string';
  if (e.label !== undefined && typeof e.label !== 'string') return 'label: must be a string';
  if (e.seed !== undefined && (typeof e.seed !== 'number' || !Number.isFinite(e.seed))) return 'seed: must be a number';
  if (e.bb !== undefined && (e.bb === null || typeof e.bb !== 'object' || Array.isArray(e.bb))) return 'bb: must be a map of key → value';
  if (e.reload !== undefined && e.reload !== 'restart' && e.reload !== 'keep') return "reload: must be 'restart' or 'keep'";
  if (e.every !== undefined) {
    const bad = badEvery(e.every);
    if (bad !== null) return `every: ${bad}`;
  }
  return null;
}

function undeclaredKey(tree: CompiledTree, values: Readonly<Record<string, unknown>>): string | null {
  for (const key of Object.keys(values)) if (!tree.blackboardKeys.has(key)) return key;
  return null;
}

function unknownAgent(id: AgentId): EntryError {
  return { id: isAgentId(id) ? id : null, code: 'E_UNKNOWN_AGENT', message: Msg.unknownAgent(id) };
}

/**
 * The level-of-detail table of a host's restored agents ([slot, agent, state]), or null when none of them had
 * one: agents without (they ticked every tick) adopt their last tick time, as when a table is created.
 */
function movedLod(agents: ReadonlyArray<readonly [number, Agent, [number, number, number] | null]>, previous: number): LodTable | null {
  if (!agents.some((x) => x[2] !== null)) return null;
  const table = new LodTable();
  for (const [slot, agent, state] of agents) {
    if (state === null) table.adopt(slot, agent.time === previous ? previous : Number.NaN);
    else table.moved(slot, state[0], state[1], state[2]);
  }
  return table;
}
