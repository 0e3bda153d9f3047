// parseServerMessage: what the encoders write reads back typed; malformed fields read as the client always
// read them; what this version does not know is null (ignored), never an exception.

import { describe, expect, it } from 'vitest';
import {
  decode,
  encodeDecisions,
  encodeDespawned,
  encodeEntryError,
  encodeError,
  encodeGoodbye,
  encodePong,
  encodeSpawned,
  ErrorCode,
  parseServerMessage,
} from '../../src/protocol/index.js';

describe('parseServerMessage', () => {
  it('reads back what the encoders write', () => {
    expect(parseServerMessage(decode(encodeSpawned([1, 'a'], [], 3)))).toEqual({ t: 'spawned', re: 3, ids: [1, 'a'], errors: [] });
    expect(parseServerMessage(decode(encodeDespawned([2], [], 4)))).toEqual({ t: 'despawned', re: 4, ids: [2], errors: [] });
    expect(parseServerMessage(decode(encodePong(7, 5)))).toEqual({ t: 'pong', re: 5, n: 7 });
    expect(parseServerMessage(decode(encodeGoodbye('shutting down', 1000)))).toEqual({ t: 'goodbye', reason: 'shutting down', retryAfterMs: 1000 });
    expect(parseServerMessage(decode(encodeDecisions({ tick: 9, basedOn: 8, actions: [[1, 1, 'walk', {}]] })))).toEqual({
      t: 'decisions',
      tick: 9,
      basedOn: 8,
      actions: [[1, 1, 'walk', {}]],
      cancels: [],
      done: [],
      errors: [],
    });
    const error = parseServerMessage(decode(encodeError(ErrorCode.E_BAD_FIELD, 'tick: expected an integer', 6)));
    expect(error).toMatchObject({ t: 'error', re: 6, code: 'E_BAD_FIELD', message: 'tick: expected an integer' });
    const entry = parseServerMessage(decode(encodeEntryError({ id: 'orc', code: ErrorCode.E_UNKNOWN_AGENT, message: 'no such agent' }, 2)));
    expect(entry).toMatchObject({ t: 'error', re: 2, entry: true, agent: 'orc', code: 'E_UNKNOWN_AGENT' });
  });

  it('reads malformed optional fields the way the client did, and ignores what it does not know', () => {
    expect(parseServerMessage({ t: 'error' })).toEqual({ t: 'error', code: 'E_INTERNAL', message: 'E_INTERNAL' });
    expect(parseServerMessage({ t: 'error', code: 'E_X', re: '1', agent: {}, entry: 1 })).toEqual({ t: 'error', code: 'E_X', message: 'E_X' });
    expect(parseServerMessage({ t: 'spawned', ids: 'x', errors: null })).toEqual({ t: 'spawned', ids: [], errors: [] });
    expect(parseServerMessage({ t: 'goodbye', reason: 3, retryAfterMs: -1 })).toEqual({ t: 'goodbye', reason: '' });
    expect(parseServerMessage({ t: 'pong', n: 'x' })).toEqual({ t: 'pong' });
    for (const v of [null, 1, 'decisions', [], { t: 'decisions' }, { t: 'welcome2' }, { t: 'hello' }]) expect(parseServerMessage(v)).toBeNull();
  });

  it('reads a hot reload\'s trees message (the client emits it), and ignores one without tree and version', () => {
    const trees = { t: 'trees', tree: 'guard', version: 2, hash: 'ab12', removed: false, policy: 'keep', restarted: 0, kept: 3 };
    expect(parseServerMessage(trees)).toEqual(trees);
    expect(parseServerMessage({ t: 'trees', tree: 'guard', version: 3, removed: true })).toEqual({ t: 'trees', tree: 'guard', version: 3, hash: null, removed: true, policy: 'restart', restarted: 0, kept: 0 });
    expect(parseServerMessage({ t: 'trees', tree: 'guard' })).toBeNull();
  });
});
