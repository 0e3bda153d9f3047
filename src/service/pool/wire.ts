// The messages between the pool's router (main thread) and an AgentHost (a worker, or the same thread in the
// inline pool), and the compact forms that keep one session tick to one message per worker.

import type { AgentFrame, AgentId, WhyReport } from '../../bt/index.js';
import type { SpawnBatch } from './spawns.js';
import type { AgentView } from './types.js';
import type { SharedColumns } from './decisions.js';

/** Type tags of row values, shared with the protocol's packed rows (the fast path copies them as they are). */
export { MAX_VECTOR, Tag } from '../../protocol/index.js';

/**
 * Positional rows for one worker, column-major per row: row i's agent is `slots[i]`, its value k is
 * `tags[i * width + k]` / `values[i * width + k]`. The buffers are transferred, never cloned, and handed
 * back with the reply so the router reuses them.
 */
export interface RowBatch {
  count: number;
  width: number;
  slots: Int32Array;
  values: Float64Array;
  tags: Uint8Array;
  /** VECTOR values, `vectorsLength` numbers used. */
  vectors: Float64Array;
  vectorsLength: number;
  other: unknown[];
}

/**
 * Positional rows for one worker still in the snapshot frames they came in (the protocol's FrameRows): row i
 * is the agent in `slots[i]`, its values start at byte `offsets[i]` of frame j, where j is the first with
 * `i < ends[j]`. The host reads them straight into observations. `slots` and `offsets` are transferred and
 * handed back like a RowBatch; the frames are copied to the worker (the main thread keeps them: the
 * recovery log and the recorder hold them by reference) and not sent back.
 */
export interface FrameBatch {
  count: number;
  slots: Int32Array;
  offsets: Int32Array;
  frames: Uint8Array[];
  ends: number[];
}

/** Action results for one worker: `count` triples (slot, seq, 1 success / 0 failure) in `data`. */
export interface ResultBatch {
  count: number;
  data: Float64Array;
}

/** A new agent for a host: [slot, id, tree, label, seed, bb, every?] (`every`: its tick interval; absent: 1); posted packed, as SpawnBatch (spawns.ts). */
export type SpawnOrder = [number, AgentId, string, string, number | null, Record<string, unknown> | null, number?];

/** The world state, cloned once per tick even when several workers need it. */
export type WorldUpdate = { value: unknown } | { bytes: Uint8Array };

/** Everything one worker needs for one session tick: buffered input, then the tick itself. */
export interface TickOrder {
  t: 'tick';
  req: number;
  session: string;
  time: number;
  dt: number;
  /** A full snapshot arrived: every agent loses its observation before `rows` and `objects` apply. */
  clear: boolean;
  bb: Array<[number, Record<string, unknown>]> | null;
  objects: Array<[number, Record<string, unknown>]> | null;
  rows: RowBatch | null;
  /** Rows still in their frames: applied after `rows` (the shard keeps them in that order), before `objects`. */
  frameRows: FrameBatch | null;
  results: ResultBatch | null;
  world: WorldUpdate | null;
  /** The generation of this host's decision buffers for the session that the router holds (SharedColumns.gen); -1: none. */
  columns: number;
  /** The session tick number (frames of watched agents carry it). */
  tick: number;
  /** Level of detail: new tick intervals `[slot, every]`, applied before the tick (absent or null: none). */
  lod?: Array<[number, number]> | null;
  /** A snapshot frame whose rows the host checks, finds and applies itself before this tick (absent or null: none). */
  stage?: TickStage | null;
}

/**
 * A lockstep snapshot handed to the one host holding its session's agents with the tick it asks for (docs/capacity.md,
 * *Round sixteen*): the `count` rows of `width` values from byte `start` of the shared `frame` are checked as the
 * protocol's fast path checks them (StageOrder), and if they pass, this host's agents' rows apply after the order's
 * other rows, then results, world and tick as ever. If they fail, the frame is not applied: neither its rows, nor its
 * results (those of `results` from `resultsFrom` on, and those still in the frame), nor its `world`, and nothing is
 * ticked; the input that was waiting before the frame (every other field, `results` before `resultsFrom`) applies all
 * the same, and the reply says `refused`: the router reads the frame itself and ticks again.
 */
export interface TickStage {
  frame: Uint8Array;
  start: number;
  count: number;
  width: number;
  resultsFrom: number;
  /**
   * Where the frame's own results list starts (its header), checked by the router's reader and left there (rows.ts
   * readResults): the host reads them after the order's `results`. -1: none in the frame (or already among `results`).
   */
  frameResults: number;
  /** The frame's world; null: it has none. Applied after the order's own `world`. */
  world: WorldUpdate | null;
}

/**
 * The snapshot frames an order reads (a tick order's frame rows' and stage's, a read order's), in a new array (null:
 * none): the router holds them until the host answers, the recovery journal until a checkpoint covers the order.
 */
export function framesOf(order: ToHost): Uint8Array[] | null {
  if (order.t === 'read') return [order.frame];
  if (order.t !== 'tick') return null;
  const stage = order.stage ?? null;
  if (order.frameRows === null || order.frameRows.frames.length === 0) return stage === null ? null : [stage.frame];
  const frames = order.frameRows.frames.slice();
  if (stage !== null) frames.push(stage.frame);
  return frames;
}

/** Router → host. `spawn` carries the session's fields so a host (or a respawned worker) needs no set-up message. */
export type ToHost =
  | { t: 'spawn'; session: string; fields: readonly string[] | null; agents: SpawnBatch }
  | { t: 'despawn'; session: string; slots: number[] }
  | { t: 'drop'; session: string }
  | TickOrder
  | { t: 'inspect'; req: number; session: string; slot: number }
  | InspectorOrder
  | CheckpointOrder
  | RestoreOrder
  | StageOrder
  | RoutesOrder
  | ReadOrder
  | { t: 'settle'; session: string }
  | { t: 'stop'; session: string; slot: number; message: string };

/**
 * Fixed mode (AgentPool.readFrame): a snapshot's rows that the main thread did not read, for the host holding every
 * agent of the session, as the snapshot arrives. The host checks all `count` rows of the shared `frame` from byte
 * `start` as the protocol's fast path does and, if every row passes, reads its agents' rows into their spare
 * observations, which become their observations at the next tick (rows of a later frame win); if one fails, nothing
 * of the frame applies. `settle`: the spares read so far become the observations now, before input that rides the
 * next tick order (rows the main thread read) lands on them.
 */
export interface ReadOrder extends Omit<StageOrder, 't' | 'host' | 'all' | 'scan'> {
  t: 'read';
}

/** The answer to a ReadOrder: whether the rows passed the check (and were read), and how many named no agent. */
export interface ReadReply {
  t: 'rowsRead';
  req: number;
  ok: boolean;
  unknown: number;
}

/**
 * The routes of the session's agents on other hosts, for the host that checks the session's frames alone when its
 * ids are not all small integers (StageOrder `scan`): `ids[i]` lives at `packed[i]` (`host << 24 | slot`; -1: it
 * went), in the order the routes changed; `reset`: these are all of them. Posted right before that host's next stage
 * order, so it stages against the routes the router has then. Not logged for crash recovery: a replaced host gets
 * the whole table again (the router forgets which host scans).
 */
export interface RoutesOrder {
  t: 'routes';
  session: string;
  reset: boolean;
  ids: AgentId[];
  packed: Int32Array;
}

/**
 * Rows the main thread did not read (docs/capacity.md): check all `count` rows of the shared `frame` from byte
 * `start` as the protocol's fast path does, and answer which of them are this host's agents'. Changes nothing on
 * the host (not logged for crash recovery): the rows come back with the next tick order as (slot, offset) pairs.
 */
export interface StageOrder {
  t: 'stage';
  req: number;
  session: string;
  frame: Uint8Array;
  start: number;
  count: number;
  width: number;
  /** The host the order goes to: the `host` of its own part of the reply. */
  host: number;
  /**
   * Not null: every agent of the session is routed in `routes` (id → `host << 24 | slot`, -1: none; shared memory,
   * the router's), and this host finds the rows of every host (`hosts` of them), not only its own.
   */
  all: { routes: Int32Array; hosts: number } | null;
  /**
   * Not null: the session's ids are not all in a shared table, and this host finds the rows of every host (`hosts`
   * of them) from its own agents and the routes of the others (RoutesOrder). Null with `all`: its own rows only.
   */
  scan: { hosts: number } | null;
}

/** The rows of one host's agents in a staged frame: `count` (slot, offset) pairs. */
export interface StagedPart {
  host: number;
  count: number;
  slots: Int32Array;
  offsets: Int32Array;
}

/**
 * The answer to a StageOrder: whether every row passed the check; if so, the rows it found (transferred), one part
 * per host with any — its own, or every host's for an order with `routes`.
 */
export interface StageReply {
  t: 'staged';
  req: number;
  ok: boolean;
  parts: StagedPart[];
}

/**
 * Export the session's agents on this host and its world, between two ticks: for crash recovery (recovery.ts) in the
 * local form, else (a durable session's export) in the portable one (checkpoint.ts, CheckpointForm).
 */
export interface CheckpointOrder {
  t: 'checkpoint';
  req: number;
  session: string;
  /** Local form, for this process's crash recovery. */
  local?: boolean;
}

/** Crash recovery: a replacement host rebuilds a session's agents from a checkpoint (then the logged orders follow). */
export interface RestoreOrder {
  t: 'restore';
  session: string;
  fields: readonly string[] | null;
  /** checkpoint.ts's packed agents and world. */
  bytes: Uint8Array;
  /** Agents in `bytes`, when the sender knows (a session imported from another instance). */
  count?: number;
}

/** A checkpoint's reply: the session's agents on the host and its world, packed (checkpoint.ts); `agents` counts them. */
export interface CheckpointReply {
  t: 'checkpointed';
  req: number;
  agents: number;
  bytes: Uint8Array;
  /** Time the host spent packing, ms (the cost figures of docs/durability.md): its parts' time, not the waits between. */
  ms: number;
  /** The longest part, ms: how long the pack held the worker at a time (`ms` for a pack in one go). */
  longestMs: number;
  /** Set for local bytes: true when they were written into given-back memory (SparesOrder). */
  reused?: boolean;
}

/** The inspector's requests about one watched agent (docs/tracing.md). */
export type InspectorOrder =
  | { t: 'watch'; req: number; session: string; slot: number; ticks: number }
  | { t: 'unwatch'; session: string; slot: number }
  | { t: 'frames'; req: number; session: string; slot: number; since: number | null }
  | { t: 'why'; req: number; session: string; slot: number; tick: number }
  /** Fault injection (inspector control): node `node` of a watched agent returns `status` (null: clear). */
  | { t: 'force'; req: number; session: string; slot: number; node: number; status: 1 | 2 | 3 | null };

/**
 * A reload (reload.ts): the whole new set of tree definitions (the host compiles them with its catalog) and,
 * per session, the slots of agents to restart on their new version at the session's next tick.
 */
export interface TreesOrder {
  t: 'trees';
  defs: Record<string, unknown>;
  restart: Array<[string, number[]]>;
}

/**
 * Buffers of a worker's replaced crash-recovery checkpoints (local form), handed back for its next packs as soon as
 * the main thread lets go of them (transferred; checkpoint.ts, giveCheckpointMemory). Not logged: it changes no agent.
 */
export interface SparesOrder {
  t: 'spares';
  buffers: ArrayBuffer[];
}

/** The messages a host answers. */
export type HostRequest = Extract<ToHost, { req: number }>;

/** A tick's reply: decisions, timing, and the input buffers handed back for reuse. */
export interface TickReply {
  t: 'ticked';
  req: number;
  ms: number;
  /** When the host began the tick, on the process-wide clock (monotonic.ts): how long the order waited for it. */
  startedAt: number;
  decisions: SharedColumns;
  rows: RowBatch | null;
  frameRows: FrameBatch | null;
  results: ResultBatch | null;
  /** The newest frame of each watched agent of the session, by slot; null when none is watched. */
  frames: Array<[number, AgentFrame]> | null;
  /** An order with a `stage` whose rows failed the check: the frame was not applied and nothing was ticked. */
  refused?: boolean;
  /** An order with a `stage`: its rows that name no agent of the session. */
  unknown?: number;
  /** An order with a `stage` whose frame held results (`frameResults`): the ids of those that named no agent here. */
  unknownResults?: AgentId[] | null;
}

/** Host → router. */
export type FromHost =
  | TickReply
  | { t: 'inspected'; req: number; inspection: AgentView | null }
  | { t: 'watching'; req: number; ok: boolean }
  | { t: 'frames'; req: number; frames: AgentFrame[] }
  | { t: 'why'; req: number; report: WhyReport | null }
  | { t: 'forced'; req: number; ok: boolean }
  | { t: 'failed'; req: number; message: string }
  | StageReply
  | ReadReply
  | CheckpointReply;

/**
 * Worker → router, once, after loading (not sent by the inline host). `tid`: the worker thread's id in the OS (Linux),
 * for the service's per-thread CPU metrics.
 */
export type WorkerHello = { t: 'ready'; ok: true; trees: Record<string, string>; tid?: number } | { t: 'ready'; ok: false; error: string };

/**
 * The ArrayBuffers of a tick order or reply, for postMessage's transfer list. World bytes are not listed:
 * the same bytes go to several workers, so they are copied (a memcpy, not a re-serialization). Decision buffers are
 * shared memory (SharedColumns): never listed.
 */
export function transferList(rows: RowBatch | null, results: ResultBatch | null, frameRows: FrameBatch | null = null): ArrayBuffer[] {
  const list: ArrayBuffer[] = [];
  if (frameRows !== null) list.push(frameRows.slots.buffer as ArrayBuffer, frameRows.offsets.buffer as ArrayBuffer);
  if (rows !== null) {
    list.push(rows.slots.buffer as ArrayBuffer, rows.values.buffer as ArrayBuffer, rows.tags.buffer as ArrayBuffer, rows.vectors.buffer as ArrayBuffer);
  }
  if (results !== null) list.push(results.data.buffer as ArrayBuffer);
  return list;
}
