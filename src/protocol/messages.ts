// The shape of every protocol v1 message, as TypeScript types: discriminated unions on `t`.
// The wire form is the same MessagePack map; docs/protocol.md shows each one in JSON notation.

import type { ErrorCode } from './codes.js';
import type { PackedRows } from './rows.js';
import type { ResultList } from './results.js';

/** An agent id: a safe integer, or a non-empty string of at most 128 characters. Unique in a session. */
export type AgentId = number | string;

/** How the session's clock runs: the service's own rate (`fixed`) or one tick per snapshot (`lockstep`). */
export type Mode = 'fixed' | 'lockstep';

/** The outcome of an action, reported by the game in `result`. */
export type ActionStatus = 'success' | 'failure';

/** How an agent's root finished, reported by the service in `decisions.done`. */
export type RootStatus = 'success' | 'failure';

/** A map of names to plain MessagePack values (nil, booleans, numbers, strings, binary, timestamps, arrays, maps). */
export type ValueMap = Readonly<Record<string, unknown>>;

/** One agent's observation in map form: field name → value. */
export type Observation = ValueMap;

/** One agent's observation in row form: the id, then one value per field declared in `hello.fields`, in order. */
export type ObservationRow = readonly [id: AgentId, ...values: unknown[]];

/** The outcome of one action: `[id, seq, status]`. */
export type ActionResult = readonly [id: AgentId, seq: number, status: ActionStatus];

// ---------------------------------------------------------------------------------------------
// Client → server

/** Fields every client message may carry: `id` (an integer) is sent back as `re` in the reply or error. */
export interface ClientMessageBase {
  /** Request id; a reply or error about this message carries it back as `re`. */
  readonly id?: number;
}

/** First message of every connection. Answered by `welcome`, or `error` `E_VERSION` and close. */
export interface HelloMessage extends ClientMessageBase {
  readonly t: 'hello';
  /** Protocol version; must be 1. */
  readonly v: number;
  /** Clock mode; `fixed` when absent. */
  readonly mode?: Mode;
  /** Ticks per second in fixed mode, in (0, 1000]; the service default when absent. */
  readonly hz?: number;
  /** Observation field names for the row form of `snapshot.agents`: unique, non-empty. */
  readonly fields?: readonly string[];
  /** A `welcome.resume` token of a dropped session to take over. */
  readonly resume?: string;
  /** Record this session (docs/recording.md); `welcome.recording` names the recording. */
  readonly record?: boolean;
}

/** One agent to create. */
export interface SpawnAgent {
  readonly id: AgentId;
  /** Name of a loaded tree. */
  readonly tree: string;
  /** A path such as `"Blue Team/Warriors/Foo"`; the debugger groups agents by `/`. */
  readonly label?: string;
  /** Seed of the agent's random generator (a safe integer); derived from the id when absent. */
  readonly seed?: number;
  /** Initial blackboard values; keys must be declared by the tree. */
  readonly bb?: ValueMap;
  /** What a reload of its tree does to this agent: `restart` or `keep` (default: the service's CANOPY_RELOAD). */
  readonly reload?: 'restart' | 'keep';
  /**
   * Level of detail (a Canopy addition): the agent is ticked every `every` session ticks, an integer from 1
   * (default 1: every tick). Agents with the same interval are spread evenly over its ticks.
   */
  readonly every?: number;
}

/** Creates agents. Answered by `spawned`; each agent succeeds or fails alone. */
export interface SpawnMessage extends ClientMessageBase {
  readonly t: 'spawn';
  readonly agents: readonly SpawnAgent[];
}

/** Removes agents. Answered by `despawned`. */
export interface DespawnMessage extends ClientMessageBase {
  readonly t: 'despawn';
  readonly ids: readonly AgentId[];
}

/** One blackboard write: `[id, { key: value }]`. */
export type BlackboardEntry = readonly [id: AgentId, values: ValueMap];

/** Writes blackboard values. No reply; problems come back as `error`. */
export interface BlackboardMessage extends ClientMessageBase {
  readonly t: 'bb';
  readonly set: readonly BlackboardEntry[];
}

/**
 * The game's state at one of its ticks. In lockstep mode the service ticks every agent once and
 * answers with exactly one `decisions` carrying the same `tick`.
 *
 * `agents` is either rows (`[id, v1, v2, ...]`, needs `hello.fields`) or a map id → observation.
 * In the map form keys are strings on the wire; use {@link agentIdFromKey} to get the agent id.
 */
export interface SnapshotMessage extends ClientMessageBase {
  readonly t: 'snapshot';
  /** The game's tick number. */
  readonly tick: number;
  /** The game clock in seconds; required in lockstep mode. */
  readonly time?: number;
  /** Replaces the session's shared world state when present. */
  readonly world?: ValueMap;
  /** Observations: rows, or a map id → observation (rows read by the service's fast path: packed in columns). */
  readonly agents?: readonly ObservationRow[] | Readonly<Record<string, Observation>> | PackedRows;
  /** Action results, as in `result` (read by the service's fast path: in columns). */
  readonly results?: ResultList;
  /** When true, agents not listed in `agents` lose their observation. */
  readonly full?: boolean;
}

/** Outcomes of actions the trees are waiting on. No reply. */
export interface ResultMessage extends ClientMessageBase {
  readonly t: 'result';
  readonly results: readonly ActionResult[];
}

/** One tick interval change: `[id, every]` (level of detail). */
export type LodEntry = readonly [id: AgentId, every: number];

/**
 * Level of detail (a Canopy addition): new tick intervals, in force from the session's next tick. No reply;
 * problems come back as `error` (entry by entry, like `bb`).
 */
export interface LodMessage extends ClientMessageBase {
  readonly t: 'lod';
  readonly agents: readonly LodEntry[];
}

/** Answered by `pong` with the same `n`. */
export interface PingMessage extends ClientMessageBase {
  readonly t: 'ping';
  readonly n?: number;
}

/** The client is leaving: the session ends and its agents are freed. */
export interface ByeMessage extends ClientMessageBase {
  readonly t: 'bye';
}

/** Every message a client may send. */
export type ClientMessage =
  | HelloMessage
  | SpawnMessage
  | DespawnMessage
  | BlackboardMessage
  | SnapshotMessage
  | ResultMessage
  | LodMessage
  | PingMessage
  | ByeMessage;

// ---------------------------------------------------------------------------------------------
// Server → client

/** Fields every reply may carry: `re` is the `id` of the request it answers. */
export interface ServerReplyBase {
  readonly re?: number;
}

/** Limits of this service, announced in `welcome`. */
export interface WelcomeLimits {
  /** Most agents one session may hold. */
  readonly maxAgents: number;
  /** Largest frame the service accepts, in bytes. */
  readonly maxFrameBytes: number;
  readonly [limit: string]: number;
}

/** Answer to `hello`: the session is open. */
export interface WelcomeMessage extends ServerReplyBase {
  readonly t: 'welcome';
  readonly v: number;
  /** The session id (changes when a resume token was unknown or expired and a new session began). */
  readonly session: string;
  /** Token for `hello.resume` after a dropped connection. */
  readonly resume: string;
  readonly mode: Mode;
  /** Ticks per second of fixed mode (not used in lockstep mode). */
  readonly hz: number;
  /** Names of the loaded trees. */
  readonly trees: readonly string[];
  readonly limits: WelcomeLimits;
  /** Per tree, the observation fields its expressions read (a protocol addition; absent from older servers). */
  readonly reads?: Readonly<Record<string, TreeReads>>;
  /** The session is being recorded: the recording's id (`GET /v1/recordings/:id`). */
  readonly recording?: string;
  /**
   * On a resume: the last tick the session has run (a protocol addition). A lockstep client re-sends what it
   * sent after that tick's snapshot, and the snapshots of ticks up to it whose decisions it did not receive.
   */
  readonly tick?: number;
}

/** The top-level observation fields a tree reads: `self.X` and `world.X` names, statically. */
export interface TreeReads {
  readonly self: readonly string[];
  readonly world: readonly string[];
  /** Roots also read with computed keys (`self[k]`) or whole: the lists may then be incomplete. */
  readonly dynamic: readonly ('self' | 'world')[];
}

/**
 * A warning in `spawned.warnings` (a protocol addition): nothing was refused, but something will not
 * work as the tree expects. Once per tree per session.
 */
export interface SpawnWarning {
  /** `W_FIELD_NOT_DECLARED`: the tree reads `self` fields that `hello.fields` does not declare (they read null). */
  readonly code: 'W_FIELD_NOT_DECLARED';
  readonly tree: string;
  /** The fields concerned. */
  readonly fields: readonly string[];
  readonly message: string;
}

/** A problem with one entry of a list: its agent id when it was readable, a code and a message. */
export interface EntryError {
  readonly id?: AgentId;
  readonly code: ErrorCode;
  readonly message: string;
}

/** Answer to `spawn`: the ids created; `errors` (absent when empty) for the rest. */
export interface SpawnedMessage extends ServerReplyBase {
  readonly t: 'spawned';
  readonly ids: readonly AgentId[];
  readonly errors?: readonly EntryError[];
  /** Absent when empty (a protocol addition). */
  readonly warnings?: readonly SpawnWarning[];
}

/** Answer to `despawn`: the ids removed; `errors` (absent when empty) for the rest. */
export interface DespawnedMessage extends ServerReplyBase {
  readonly t: 'despawned';
  readonly ids: readonly AgentId[];
  readonly errors?: readonly EntryError[];
}

/** A new action for the game to start: `[id, seq, action, args]`. */
export type ActionDecision = readonly [id: AgentId, seq: number, action: string, args: ValueMap];
/** A running action the game must stop: `[id, seq]`. */
export type CancelDecision = readonly [id: AgentId, seq: number];
/** An agent whose root finished this tick: `[id, status]`. */
export type DoneDecision = readonly [id: AgentId, status: RootStatus];
/** An agent stopped by an error (e.g. a plugin threw): `[id, code, message]`. */
export type AgentError = readonly [id: AgentId, code: ErrorCode, message: string];

/** What the trees decided at one service tick. Empty lists are left out. */
export interface DecisionsMessage {
  readonly t: 'decisions';
  /** Service tick (fixed mode) or the snapshot's tick (lockstep mode). */
  readonly tick: number;
  /** The latest snapshot tick applied; absent before the first snapshot. */
  readonly basedOn?: number;
  readonly actions?: readonly ActionDecision[];
  readonly cancels?: readonly CancelDecision[];
  readonly done?: readonly DoneDecision[];
  readonly errors?: readonly AgentError[];
}

/** Answer to `ping`. */
export interface PongMessage extends ServerReplyBase {
  readonly t: 'pong';
  readonly n?: number;
}

/**
 * A message was refused (or something else went wrong); `re` names the request when it had an
 * `id`. With `entry: true` only one entry of a `bb`, `result` or `snapshot` list was refused
 * (`agent` is its agent id when readable) and the rest of the message was applied; without it,
 * the whole message was dropped.
 */
export interface ErrorMessage extends ServerReplyBase {
  readonly t: 'error';
  readonly code: ErrorCode;
  readonly message: string;
  readonly entry?: boolean;
  readonly agent?: AgentId;
}

/** The server is about to close the socket (shutdown, limits). */
export interface GoodbyeMessage {
  readonly t: 'goodbye';
  readonly reason: string;
  /** Reconnect no sooner than this; absent means "do not reconnect" (taken over, abuse). */
  readonly retryAfterMs?: number;
}

/** A tree was reloaded (docs/reload.md): its new version and what that did to this session's agents. */
export interface TreesMessage {
  readonly t: 'trees';
  readonly tree: string;
  readonly version: number;
  /** Null when the tree was removed. */
  readonly hash: string | null;
  readonly removed: boolean;
  /** The service's policy (CANOPY_RELOAD); a spawn's own `reload` field wins for its agent. */
  readonly policy: 'restart' | 'keep';
  /** This session's agents on the tree restarted on the new version, and kept on their old one. */
  readonly restarted: number;
  readonly kept: number;
}

/** Every message a server sends. */
export type ServerMessage =
  | WelcomeMessage
  | SpawnedMessage
  | DespawnedMessage
  | DecisionsMessage
  | PongMessage
  | ErrorMessage
  | GoodbyeMessage
  | TreesMessage;

/** Any protocol message. */
export type Message = ClientMessage | ServerMessage;

const CANONICAL_INT = /^(?:0|-?[1-9][0-9]{0,15})$/;

/**
 * The agent id a key of `snapshot.agents` (map form) names. MessagePack map keys arrive as
 * strings in many decoders, so a key that is the decimal form of a safe integer (`"7"`, `"-3"`;
 * not `"07"` or `"+7"`) names the integer id 7; every other key names the string id itself.
 * A consequence: string ids such as `"7"` cannot be addressed in the map form (use rows).
 */
export function agentIdFromKey(key: string): AgentId {
  if (CANONICAL_INT.test(key)) {
    const n = Number(key);
    if (Number.isSafeInteger(n)) return n;
  }
  return key;
}
