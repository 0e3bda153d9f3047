// The agent pool's public contract: what the session layer hands in (spawns, rows, results) and gets back
// (one Decisions per session tick). Both pools, inline and worker threads, implement AgentPool.

import type { AgentFrame, AgentId, AgentInspection, WatchedFrame, WhyReport } from '../../bt/index.js';
import type { ActionDecision, CancelDecision, DoneDecision, EncodedTuples, KnownIds, PackedRows, ResultList, StagedRows } from '../../protocol/index.js';
import type { TreeLibrary } from '../../bt/library.js';

/** One agent to create (the protocol's `spawn` entry). `bb` holds declared keys only. */
export interface SpawnEntry {
  id: AgentId;
  tree: string;
  label?: string;
  seed?: number;
  bb?: Record<string, unknown>;
  /** What a reload of its tree does to this agent (default: the pool's policy given to `reload`). */
  reload?: ReloadPolicy;
  /** Level of detail: the agent is ticked every `every` session ticks (an integer from 1, default 1). */
  every?: number;
}

/**
 * What a tree reload does to an agent already running on a changed tree (docs/reload.md): `restart` halts
 * it (cancels go out with the next tick), keeps the blackboard keys that still exist and ticks the new
 * version from its root; `keep` leaves it on its old version until it is despawned.
 */
export type ReloadPolicy = 'restart' | 'keep';

/** What a reload did to each session's agents: per session, per changed tree, agents restarted and kept. */
export type ReloadOutcome = Map<string, Map<string, { restarted: number; kept: number }>>;

/** Why one entry of a spawn, despawn, bb or result list was refused; the other entries go on. */
export interface EntryError {
  id: AgentId | null;
  code: 'E_UNKNOWN_TREE' | 'E_DUPLICATE_AGENT' | 'E_UNKNOWN_AGENT' | 'E_UNKNOWN_KEY' | 'E_LIMIT' | 'E_BAD_FIELD';
  message: string;
}

/**
 * What one session tick decided, merged over every worker, protocol-shaped (protocol.md, `decisions`): every list
 * in the order the agents were spawned, each agent's own entries in the order its tree made them.
 */
export interface Decisions {
  tick: number;
  basedOn: number;
  /**
   * As a game server reads them: decoded from `encodedActions` when first read (args as MessagePack carries them:
   * maps as plain objects, `undefined` as null, 64-bit integers as numbers).
   */
  actions: Array<[AgentId, number, string, unknown]>;
  /** The actions encoded as the `decisions` frame carries them, for writers to splice (not enumerable). */
  readonly encodedActions: EncodedTuples<ActionDecision>;
  /** Decoded from `encodedCancels` when first read. */
  cancels: Array<[AgentId, number]>;
  readonly encodedCancels: EncodedTuples<CancelDecision>;
  /** Decoded from `encodedDone` when first read. */
  done: Array<[AgentId, 'success' | 'failure']>;
  readonly encodedDone: EncodedTuples<DoneDecision>;
  errors: Array<[AgentId, string, string]>;
}

/** A snapshot frame for tickFrame: its `count` rows of `width` values from byte `start` to its end, unread; its world and results, read. */
export interface UnreadFrame {
  bytes: Uint8Array;
  start: number;
  count: number;
  width: number;
  /** The snapshot's world; undefined: it has none. */
  world: unknown;
  results: ResultList | undefined;
}

/** What tickFrame gives: the tick's decisions, the errors of the frame's results, its rows that named no agent. */
export interface FrameTick {
  decisions: Decisions;
  errors: EntryError[];
  unknown: number;
}

/**
 * A pino-compatible logger. The pool logs rare events (worker crashes, load failures) and the lines of trees'
 * `log` nodes (at their level, at most LOG_LINES_PER_TICK per session tick).
 */
export interface PoolLogger {
  debug?(obj: unknown, msg?: string): void;
  info(obj: unknown, msg?: string): void;
  warn(obj: unknown, msg?: string): void;
  error(obj: unknown, msg?: string): void;
  /** pino's: whether lines of this level are written. Lines of a level that is not are not collected. */
  isLevelEnabled?(level: string): boolean;
}

/** One line of a tree's `log` node, as logged by the service and given to AgentPool.onLog listeners. */
export interface PoolLogEvent {
  session: string;
  /** The session tick that ran the node. */
  tick: number;
  agent: AgentId;
  label: string;
  tree: string | null;
  /** The `log` node's number in its tree and its JSON path (null if unknown). */
  node: number | null;
  path: string | null;
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
}

/** Where a pool reports a timing (seconds): a histogram's observations (metrics.ts). */
export interface Observer {
  observe(seconds: number): void;
}

/**
 * Where a worker pool reports the three parts of each tick order's round trip, in seconds: `waiting`, from the main
 * thread's post to the worker starting the tick (the worker busy with other sessions' work, or waiting for a core);
 * `working`, the worker's tick; `returning`, from the worker's reply to the main thread reading it (the main thread
 * busy, or waiting for a core).
 */
export interface TickParts {
  readonly waiting: Observer;
  readonly working: Observer;
  readonly returning: Observer;
}

/** How to build a pool. */
export interface PoolOptions {
  /** The tree folder (trees.md), loaded by the main thread (to check spawns) and by every worker. */
  trees: string;
  /** A folder of plugin modules (`.js`, `.mjs`, `.cjs`; each default-exports a CanopyPlugin), or undefined. */
  plugins?: string;
  /** Worker threads hosting agents; 0 = inline: agents are ticked on the calling thread (tests, tiny deployments). */
  workers: number;
  /** Where crashes and respawns are reported. Default: nothing is logged. */
  logger?: PoolLogger;
  /**
   * A worker that owes work (a request or message not finished) and makes no progress of its own for this long
   * (ms) is stuck — a plugin in an endless loop — and is terminated and replaced like a crashed one (its agents
   * reported lost). Progress is counted by the worker in shared memory: a busy or blocked main thread reading
   * replies late never makes a worker look stuck. 0: never. Default 10 s.
   * The inline pool cannot be protected this way: its agents tick on the calling thread.
   */
  stallMs?: number;
  /**
   * Event-loop utilization is measured over fixed windows of this many ms inside the pool; workerStats() reports
   * the last completed window (0 before the first). Default 5000.
   */
  eluWindowMs?: number;
  /** The same folders already loaded on this thread (the service's own library): not loaded again. */
  library?: TreeLibrary;
  /**
   * Crash and stall recovery (docs/durability.md): per session and worker, the agents' state is checkpointed at
   * the first tick this many ms of session time (the ticks' `time`) after the previous checkpoint once at least
   * `checkpointTicks` ticks were logged since or the logged input has grown as large as the checkpoint, and at
   * least every 200 ticks; the orders sent since are kept; a
   * worker that crashes or stalls is replaced and its agents restored from them, exactly. Default 2000.
   * Negative: no recovery (a crashed worker's agents are reported lost, as before). Worker pools only.
   */
  checkpointMs?: number;
  /**
   * Ticks between two checkpoints of a session on a worker at least, unless the input logged since is as large as
   * the checkpoint (memory stays bounded). Default 20: at 20 Hz `checkpointMs` decides (40 ticks); at 1 Hz a
   * checkpoint every 2 ticks would cost more CPU and garbage than the ticks themselves (1,000,000 agents).
   */
  checkpointTicks?: number;
  /**
   * Each worker thread's young generation in MB (Worker `resourceLimits.maxYoungGenerationSizeMb`); 0: V8's
   * default. Default 48 (DEFAULT_WORKER_YOUNG_GENERATION_MB): V8's default keeps a worker's collector in
   * back-to-back mark-compacts (docs/capacity.md). Worker pools only.
   */
  workerYoungGenerationMb?: number;
  /**
   * The workers' young generation starts at `workerYoungGenerationMb` rather than growing to it from V8's 0.5 MB
   * semi-spaces (V8's `--min-semi-space-size`, set for the isolates created after it). A game's first spawns and
   * ticks then scavenge a few times instead of dozens, each copying the new agents, and fault in no new pages
   * once the start-up warm-up has touched them (docs/capacity.md, "Round twenty-nine"). Default true.
   */
  workerYoungGenerationFromStart?: boolean;
  /**
   * Sessions kept on one worker: a session's new agents go to its home worker (the least loaded one when its first
   * agent came) while that worker would then hold at most this many agents more than the least loaded one, else to
   * the least loaded. A session on one worker costs the main thread one round trip per tick instead of one per
   * worker (plus the stage) and no merge; the price is workers up to this many agents apart. 0: every agent to the
   * least loaded worker (each session spread evenly). Default 8192 (DEFAULT_SESSION_AFFINITY). Worker pools only.
   */
  sessionAffinity?: number;
  /**
   * A session that has not ticked yet and spawned (or was created) less than this many ms ago counts, for placement,
   * as large as the largest such session: game servers that start together are alike and spawn in several messages.
   * Older quiet sessions count as at least `sessionAffinity` agents. Default 2000 (DEFAULT_SPAWNING_MS); 0: never
   * alike. Worker pools only.
   */
  spawningMs?: number;
  /**
   * Lockstep snapshots of fewer rows are not staged on the workers: the main thread checks and routes their rows itself,
   * which costs it less than the stage's round trip. Default 256 (MIN_STAGED_ROWS); 0 stages every frame. Worker pools only.
   */
  minStagedRows?: number;
  /** Called each time a crashed or stalled worker is replaced and its agents restored (the metrics count it). */
  onRecovery?: () => void;
}

/**
 * One agent's inspection (inspectAgent, `GET /v1/sessions/:id/agents/:agent`): the engine's AgentInspection, its
 * action nodes carrying `action` (and showing it as `name` when the node has none), plus the agent's latest
 * observation `self` (null before any) and its session's `world` (null before any).
 */
export type AgentView = Omit<AgentInspection, 'nodes'> & {
  readonly nodes: ReadonlyArray<AgentInspection['nodes'][number] & { readonly action?: string }>;
  readonly self: unknown;
  readonly world: unknown;
  /** Its tick interval (level of detail): ticked every `every` session ticks (1: every tick). */
  readonly every: number;
};

/** A whole session's agents, packed ({@link AgentPool.exportSession}); structured-clone and v8-serializable. */
export interface SessionExport {
  readonly v: 1;
  /** The next spawn ordinal: decisions are listed in spawn order, whatever the workers. */
  readonly nextOrdinal: number;
  readonly world: unknown;
  /** Per host that held agents: checkpoint.ts's packed agents, and per agent [slot, spawn ordinal, reload policy or null]. */
  readonly parts: ReadonlyArray<{ readonly bytes: Uint8Array; readonly agents: number; readonly meta: ReadonlyArray<readonly [number, number, ReloadPolicy | null]> }>;
}

/** One agent as the routing table knows it (no worker round trip). */
export interface AgentListing {
  id: AgentId;
  tree: string;
  label: string;
  /** The worker hosting it; 0 in the inline pool. */
  worker: number;
}

/** Load figures of one worker (the calling thread for the inline pool). */
export interface WorkerStats {
  worker: number;
  /** Agents hosted, every session included. */
  agents: number;
  /** Event-loop utilization over the last completed window (PoolOptions.eluWindowMs; 0 before the first), 0–1. */
  elu: number;
  /** Duration of the worker's last tick (input applied + agents ticked), ms. */
  lastTickMs: number;
  /** The worker thread's id in the OS (Linux), once it is ready; undefined for an inline pool or elsewhere. */
  threadId?: number;
}

/**
 * Hosts the agents of every session and ticks them: inline on the calling thread, or spread over worker
 * threads with the main thread only routing. The session layer owns sessions' clocks and sockets; the
 * pool owns agents. Calls other than `tick` and `inspectAgent` are synchronous and take effect in order.
 * Inputs (rows, world, bb values, results) are taken over by the pool: do not mutate them afterwards.
 */
export interface AgentPool {
  /** Worker threads in use; 0 for the inline pool. */
  readonly workerCount: number;
  /** Resolves when every worker has loaded trees and plugins; rejects with the loader's error text if they fail. */
  ready(): Promise<void>;
  /**
   * Opens a session. `fields`: observation field names for positional rows (null: map-form observations only).
   * Throws if the session exists or `fields` repeats a name or uses `__proto__`.
   */
  /**
   * `clocked`: the session ticks on its own clock (fixed mode), from before its game spawns its agents: its ticks do
   * not say that it stopped spawning (placement: PoolRouter.homeFor), its input does.
   */
  createSession(session: string, opts: { fields: readonly string[] | null; maxAgents: number; clocked?: boolean }): void;
  /** Frees every agent of the session (no cancels are produced). Unknown sessions are ignored. */
  destroySession(session: string): void;
  /**
   * Durable sessions (docs/durability.md, "Across instances"): the session's agents as they are after the tick
   * order just sent, packed by each host that holds some, with the routing facts a restore needs (spawn order,
   * reload policies) and the world. Call it right after `tick()` was called (before awaiting it) or between
   * ticks: the checkpoint requests queue behind the tick orders, so no tick waits for them.
   */
  exportSession(session: string): Promise<SessionExport>;
  /**
   * Opens session `session` from an export, on any number of workers (agents are spread again, least-loaded
   * first, in their spawn order): every agent continues exactly where it was. Throws if the session exists or
   * a tree is missing or of another version than the export's.
   */
  importSession(session: string, opts: { fields: readonly string[] | null; maxAgents: number }, exported: SessionExport): void;
  /**
   * Synchronous checks on the main thread (unknown tree, duplicate id, undeclared bb key, maxAgents → E_LIMIT),
   * then agents are created in workers (spread: least-loaded worker first, so one session with 50k agents
   * uses every worker). Each entry succeeds or fails alone. `more`: agents of the same spawn still to come in later
   * calls (a large spawn handled in parts): placement counts them on the session's worker already.
   */
  spawn(session: string, entries: readonly SpawnEntry[], more?: number): { ids: AgentId[]; errors: EntryError[] };
  /**
   * Frees agents. Their running actions are halted (plugin halt hooks run) but no cancels are produced:
   * the game server removed the agent. Unknown ids → E_UNKNOWN_AGENT.
   */
  despawn(session: string, ids: readonly AgentId[]): { ids: AgentId[]; errors: EntryError[] };
  /** Blackboard writes, applied at the start of the next tick. Unknown agent or undeclared key → an error entry, nothing written. */
  setBlackboard(session: string, entries: ReadonlyArray<readonly [AgentId, Record<string, unknown>]>): EntryError[];
  /**
   * Positional rows `[id, v1, v2...]` in the session's `fields` order, or a map id → observation object.
   * Buffered per worker until the next tick(). Returns how many rows named unknown agents (ignored, counted).
   * `full`: agents not listed lose their observation (self = null). A row shorter than `fields` reads null
   * for the missing values. Map keys that are integers in canonical form also match numeric ids.
   * Throws on positional rows in a session without `fields`.
   */
  observe(
    session: string,
    agents: ReadonlyArray<readonly unknown[]> | Readonly<Record<string, Record<string, unknown>>> | PackedRows,
    full: boolean,
  ): { unknown: number };
  /**
   * Rows the main thread does not read: the workers holding agents of the session check a snapshot frame's rows
   * (`count` rows of `width` values from byte `start` to the frame's end) and find their own agents' rows. Resolves
   * with rows for `observe`, or null (rows that fail the check, a worker that could not answer): read the frame the
   * ordinary way then. Null at once where the pool reads rows itself (the inline pool; a worker of the session down).
   */
  stageRows(session: string, bytes: Uint8Array, start: number, count: number, width: number): Promise<StagedRows | null> | null;
  /**
   * A lockstep snapshot applied and ticked in one message to the one worker holding every agent of the session
   * (docs/capacity.md, *Round sixteen*): what `results(frame.results)`, `setWorld(frame.world)`, `observe` of the
   * frame's rows and `tick` do, without the main thread reading the rows and without a stage's round trip. Resolves
   * with null, nothing of the frame applied and nothing ticked, when the rows fail the protocol's check (input
   * buffered before the frame is applied all the same): read the frame the ordinary way then. Null at once where
   * it does not apply (the inline pool; agents on several workers or none; a tick in progress; rows of another width).
   */
  tickFrame(session: string, tick: number, time: number, dt: number, basedOn: number, frame: UnreadFrame): Promise<FrameTick | null> | null;
  /**
   * Fixed mode: a snapshot frame's rows, unread here, to the one worker holding every agent of the session, which
   * checks them and reads them into its agents' observations as the frame arrives (docs/capacity.md, *Round
   * twenty-six*); the next tick sees them, as it sees rows `observe` applied. Resolves with how many rows named no
   * agent, or null when the rows fail the protocol's check or the worker could not answer (nothing of the frame
   * applied): read the frame the ordinary way then. Null at once where it does not apply (the inline pool; agents on
   * several workers or none; a worker down; rows of another width; rows from `observe` waiting for the next tick).
   */
  readFrame(session: string, bytes: Uint8Array, start: number, count: number, width: number): Promise<{ unknown: number } | null> | null;
  /** The session's string ids, for the protocol's fast path to find from a frame's bytes (null: no such session). */
  knownIds(session: string): KnownIds | null;
  /** Replaces the session's shared world state (sent to workers with the next tick). */
  setWorld(session: string, world: unknown): void;
  /**
   * Level of detail: new tick intervals `[id, every]`, in force from the session's next tick (each agent then
   * waits its phase under the new interval). Unknown agent → E_UNKNOWN_AGENT, a bad interval → E_BAD_FIELD.
   */
  lod(session: string, entries: ReadonlyArray<readonly [AgentId, number]>): EntryError[];
  /** Action results `[id, seq, status]`; buffered per worker until the next tick. Unknown agent → E_UNKNOWN_AGENT error entry. */
  results(session: string, results: ResultList): EntryError[];
  /**
   * Sends ONE message per worker holding this session's buffered input (rows, world, results, bb writes) and
   * the tick command; every agent of the session is ticked exactly once at tree time `time`; replies are
   * merged into one Decisions. Ticks of one session never overlap: the caller awaits (an overlapping call
   * rejects). If a worker crashes meanwhile the tick rejects; the decisions the other workers made are
   * delivered with the next tick, and the lost agents are reported there as `E_INTERNAL` errors.
   */
  tick(session: string, tick: number, time: number, dt: number, basedOn: number): Promise<Decisions>;
  /** The session's agents, from the routing table. */
  listAgents(session: string): AgentListing[];
  /** A snapshot of one agent for tools (asks its worker): state, observation, world; null if unknown. */
  inspectAgent(session: string, id: AgentId): Promise<AgentView | null>;
  /** Agents of one session, or of every session. */
  agentCount(session?: string): number;
  /**
   * Per worker: agents hosted, event-loop utilization over the last completed window (0–1; the same for every
   * caller until the next window completes), last tick duration ms.
   */
  workerStats(): WorkerStats[];
  /** Stops the workers; pending ticks reject. */
  close(): Promise<void>;
  /**
   * Installs a new library on every host at once (between two ticks of every session: one message per host,
   * posted in one go). New spawns use it. Agents on a tree named in `changed` follow their spawn's `reload`
   * policy, else `policy`: restarted agents switch at their session's next tick; kept ones, and agents whose
   * tree was removed, stay on their version until despawned.
   */
  reload(library: TreeLibrary, changed: ReadonlySet<string>, policy: ReloadPolicy): ReloadOutcome;

  // The inspector (docs/tracing.md): only watched agents record frames; the others pay nothing.
  /**
   * Starts recording frames for one agent in a ring buffer of `ticks` frames (the caller picks ≥ 30 s at the
   * session's hz). Watching a watched agent resizes its buffer and keeps its frames. False for an unknown agent.
   */
  watch(session: string, agent: AgentId, ticks: number): Promise<boolean>;
  /** Stops recording and frees the agent's frames. Unknown agents and sessions are ignored. */
  unwatch(session: string, agent: AgentId): Promise<void>;
  /** The agent's ring buffer, oldest first (frames with tick ≥ sinceTick if given); [] when not watched. */
  frames(session: string, agent: AgentId, sinceTick?: number): Promise<AgentFrame[]>;
  /** The why of one tick still in the agent's ring buffer; null if it has left it (or the agent is not watched). */
  why(session: string, agent: AgentId, tick: number): Promise<WhyReport | null>;
  /**
   * Inspector control (fault injection): node `node` of watched agent `agent` returns `status` (1 success,
   * 2 failure, 3 running; null: runs normally) from its next tick on, without running. Unwatched agents of the
   * same tree are unaffected. False when the agent is not watched or the node is unknown.
   */
  force(session: string, agent: AgentId, node: number, status: 1 | 2 | 3 | null): Promise<boolean>;
  /**
   * Called on the main thread after each session tick with the newest frame of each watched agent of that
   * session (not called when the session has none). Frames of watched agents ride on the tick reply.
   * Unwatching is automatic when the agent is despawned, lost or its session ends.
   */
  onFrames: ((session: string, frames: WatchedFrame[]) => void) | null;
  /**
   * Called on the main thread with every `log` node line that is logged (the same per-session per-tick cap),
   * after the tick's decisions are merged; null: none. For tools such as the inspector's timeline.
   */
  onLog: ((event: PoolLogEvent) => void) | null;
}
