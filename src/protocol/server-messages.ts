// Reading what a server sends: one parser for the client SDK and the tests' fake server, instead of
// hand checks with casts at each use. Lenient like a client must be: unknown types and fields are ignored.

import { ErrorCode } from './codes.js';
import type {
  AgentId,
  DecisionsMessage,
  DespawnedMessage,
  EntryError,
  ErrorMessage,
  GoodbyeMessage,
  PongMessage,
  ServerMessage,
  SpawnedMessage,
  TreesMessage,
  WelcomeMessage,
} from './messages.js';

type Fields = Readonly<Record<string, unknown>>;

/**
 * A decoded frame from the server as a typed message, or null when it is not a message this
 * protocol version knows (not a map, or an unknown `t`: a newer server's addition, to be ignored).
 * A `decisions` without a numeric `tick` is not a message either. Malformed optional fields are read the way the client always read them: `re` and `n` only when
 * numbers; lists that are not arrays as empty; an error without a code as `E_INTERNAL` and without
 * a message as its code; a `goodbye` reason that is not a string as `''` and a negative or
 * non-numeric `retryAfterMs` as absent. `welcome` is returned as sent.
 */
export function parseServerMessage(value: unknown): ServerMessage | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const m = value as Fields;
  const re = typeof m['re'] === 'number' ? { re: m['re'] } : {};
  switch (m['t']) {
    case 'welcome':
      // The handshake reads its fields as sent (older and newer servers differ in what they add).
      return value as WelcomeMessage;
    case 'spawned':
    case 'despawned': {
      const out: SpawnedMessage | DespawnedMessage = {
        t: m['t'],
        ...re,
        ids: list<AgentId>(m['ids']),
        errors: list<EntryError>(m['errors']),
      };
      return out;
    }
    case 'decisions': {
      const tick = m['tick'];
      if (typeof tick !== 'number') return null;
      const out: DecisionsMessage = {
        t: 'decisions',
        tick,
        ...(typeof m['basedOn'] === 'number' ? { basedOn: m['basedOn'] } : {}),
        actions: list(m['actions']),
        cancels: list(m['cancels']),
        done: list(m['done']),
        errors: list(m['errors']),
      };
      return out;
    }
    case 'pong': {
      const out: PongMessage = { t: 'pong', ...re, ...(typeof m['n'] === 'number' ? { n: m['n'] } : {}) };
      return out;
    }
    case 'error': {
      const code = typeof m['code'] === 'string' ? (m['code'] as ErrorCode) : ErrorCode.E_INTERNAL;
      const agent = m['agent'];
      const out: ErrorMessage = {
        t: 'error',
        ...re,
        code,
        message: typeof m['message'] === 'string' ? m['message'] : code,
        ...(m['entry'] === true ? { entry: true } : {}),
        ...(typeof agent === 'number' || typeof agent === 'string' ? { agent } : {}),
      };
      return out;
    }
    case 'goodbye': {
      const after = m['retryAfterMs'];
      const out: GoodbyeMessage = {
        t: 'goodbye',
        reason: typeof m['reason'] === 'string' ? m['reason'] : '',
        ...(typeof after === 'number' && after >= 0 ? { retryAfterMs: after } : {}),
      };
      return out;
    }
    case 'trees': {
      // A hot reload (docs/reload.md): read only when its required fields are there.
      if (typeof m['tree'] !== 'string' || typeof m['version'] !== 'number') return null;
      const out: TreesMessage = {
        t: 'trees',
        tree: m['tree'],
        version: m['version'],
        hash: typeof m['hash'] === 'string' ? m['hash'] : null,
        removed: m['removed'] === true,
        policy: m['policy'] === 'keep' ? 'keep' : 'restart',
        restarted: typeof m['restarted'] === 'number' ? m['restarted'] : 0,
        kept: typeof m['kept'] === 'number' ? m['kept'] : 0,
      };
      return out;
    }
    default:
      return null;
  }
}

const EMPTY: readonly never[] = Object.freeze([]);

function list<T>(v: unknown): readonly T[] {
  return Array.isArray(v) ? (v as T[]) : EMPTY;
}
