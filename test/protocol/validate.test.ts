// Every rule of the validator, with the exact error it produces. Frames are real MessagePack
// bytes (encoded here or written by hand), so the protocol itself is pinned, not just the SDK.

import { describe, expect, it } from 'vitest';
import {
  LIMITS,
  Msg,
  agentIdFromKey,
  encode,
  parseClientFrame,
  parseClientMessage,
  type ParseOk,
  type ParseOptions,
  type ParseResult,
  type SnapshotMessage,
} from '../../src/protocol/index.js';

const MAX = 1 << 20;
const ID_REASON = 'expected an integer or a non-empty string of at most 128 characters';

function parse(value: unknown, options?: ParseOptions): ParseResult {
  return parseClientFrame(encode(value), MAX, options);
}

function accepted(value: unknown, options?: ParseOptions): ParseOk {
  const result = parse(value, options);
  if (!result.ok) throw new Error(`refused: ${result.code} ${result.message}`);
  return result;
}

function refused(value: unknown, options?: ParseOptions): { code: string; message: string; re?: number } {
  const result = parse(value, options);
  if (result.ok) throw new Error(`accepted: ${JSON.stringify(result.msg)}`);
  const { code, message, re } = result;
  return re === undefined ? { code, message } : { code, message, re };
}

const bad = (message: string, re?: number) =>
  re === undefined ? { code: 'E_BAD_FIELD', message } : { code: 'E_BAD_FIELD', message, re };

const fromHex = (text: string): Uint8Array => new Uint8Array(Buffer.from(text.replace(/\s+/g, ''), 'hex'));

describe('frames', () => {
  it('E_LIMIT: a frame over maxFrameBytes, before any decoding', () => {
    const frame = encode({ t: 'ping' });
    expect(parseClientFrame(frame, frame.length)).toMatchObject({ ok: true });
    expect(parseClientFrame(frame, frame.length - 1)).toEqual({
      ok: false,
      code: 'E_LIMIT',
      message: `frame of ${frame.length} bytes exceeds the limit of ${frame.length - 1} bytes`,
    });
  });

  it('E_PROTOCOL: not MessagePack, truncated, trailing bytes, empty', () => {
    const frame = encode({ t: 'ping', n: 1 });
    expect(parseClientFrame(frame.subarray(0, frame.length - 1), MAX)).toEqual({
      ok: false,
      code: 'E_PROTOCOL',
      message: 'frame ends in the middle of a value',
    });
    expect(parseClientFrame(Buffer.concat([frame, frame]), MAX)).toEqual({
      ok: false,
      code: 'E_PROTOCOL',
      message: 'frame holds bytes after the first value; send one message per frame',
    });
    expect(parseClientFrame(new Uint8Array(0), MAX)).toEqual({ ok: false, code: 'E_PROTOCOL', message: 'frame ends in the middle of a value' });
    expect(parseClientFrame(fromHex('81 a174 d40500'), MAX)).toEqual({
      ok: false,
      code: 'E_PROTOCOL',
      message: 'MessagePack extension type 5 is not part of the protocol (only the timestamp, -1)',
    });
  });

  it('E_PROTOCOL: the top level is not a map', () => {
    for (const value of [[1, 2], 'hello', 7, null, true, new Date(0)]) {
      expect(refused(value)).toEqual({ code: 'E_PROTOCOL', message: 'frame must be a MessagePack map' });
    }
    expect(parseClientFrame(Buffer.from('{"t":"ping"}'), MAX)).toMatchObject({ code: 'E_PROTOCOL', message: 'frame must be a MessagePack map' });
  });

  it('E_PROTOCOL: t missing or not a string, with re when id is valid', () => {
    expect(refused({})).toEqual({ code: 'E_PROTOCOL', message: 't: missing; every frame names its message type in t' });
    expect(refused({ id: 4, n: 1 })).toEqual({ code: 'E_PROTOCOL', message: 't: missing; every frame names its message type in t', re: 4 });
    expect(refused({ t: 3, id: 5 })).toEqual({ code: 'E_PROTOCOL', message: 't: expected a string naming the message type', re: 5 });
    expect(refused({ t: null })).toEqual({ code: 'E_PROTOCOL', message: 't: expected a string naming the message type' });
  });

  it('E_UNKNOWN_MESSAGE: unknown t, and server message types sent by a client', () => {
    expect(refused({ t: 'dance', id: 9 })).toEqual({ code: 'E_UNKNOWN_MESSAGE', message: 'unknown message type "dance"', re: 9 });
    expect(refused({ t: '' })).toEqual({ code: 'E_UNKNOWN_MESSAGE', message: 'unknown message type ""' });
    expect(refused({ t: 'welcome' })).toEqual({
      code: 'E_UNKNOWN_MESSAGE',
      message: '"welcome" is a message the server sends, not one a client may send',
    });
    expect(refused({ t: 'constructor' })).toEqual({ code: 'E_UNKNOWN_MESSAGE', message: 'unknown message type "constructor"' });
    // Client text is quoted JSON-escaped and cut short.
    expect(refused({ t: `x${'"'.repeat(100)}` }).message).toBe(`unknown message type ${JSON.stringify(`x${'"'.repeat(63)}…`)}`);
  });

  it('E_BAD_FIELD: id that is not an integer; nil id means none', () => {
    expect(refused({ t: 'ping', id: 1.5 })).toEqual(bad('ping.id: expected an integer'));
    expect(refused({ t: 'ping', id: '1' })).toEqual(bad('ping.id: expected an integer'));
    expect(refused({ t: 'ping', id: 2 ** 60 })).toEqual(bad('ping.id: expected an integer between -(2^53 - 1) and 2^53 - 1'));
    expect(accepted({ t: 'ping', id: null }).msg).toEqual({ t: 'ping', id: undefined, n: undefined });
    expect(accepted({ t: 'ping', id: -3 }).msg).toMatchObject({ id: -3 });
  });

  it('ignores unknown fields', () => {
    expect(accepted({ t: 'bye', id: 1, extra: { deep: [1] } }).msg).toEqual({ t: 'bye', id: 1 });
  });
});

describe('hello', () => {
  it('accepts a minimal hello and fills in the default mode', () => {
    expect(accepted({ t: 'hello', v: 1 }).msg).toEqual({
      t: 'hello',
      id: undefined,
      v: 1,
      mode: 'fixed',
      hz: undefined,
      fields: undefined,
      resume: undefined,
    });
  });

  it('accepts every field', () => {
    const msg = { t: 'hello', id: 1, v: 1, mode: 'lockstep', hz: 0.5, fields: ['x', 'y', 'hp'], resume: 'tok' };
    expect(accepted(msg).msg).toEqual(msg);
    expect(accepted({ t: 'hello', v: 1, hz: 1000 }).msg).toMatchObject({ hz: 1000 });
    expect(accepted({ t: 'hello', v: 1, mode: null, hz: null, fields: null, resume: null }).msg).toMatchObject({ mode: 'fixed' });
  });

  it('E_VERSION for an integer v other than 1; E_BAD_FIELD for a missing or non-integer v', () => {
    expect(refused({ t: 'hello', v: 2, id: 3 })).toEqual({
      code: 'E_VERSION',
      message: 'protocol version 2 is not supported; this server speaks 1',
      re: 3,
    });
    expect(refused({ t: 'hello', v: 0 })).toMatchObject({ code: 'E_VERSION' });
    expect(refused({ t: 'hello' })).toEqual(bad('hello.v: expected an integer'));
    expect(refused({ t: 'hello', v: '1' })).toEqual(bad('hello.v: expected an integer'));
    expect(refused({ t: 'hello', v: 1.5 })).toEqual(bad('hello.v: expected an integer'));
  });

  it('mode, hz, resume', () => {
    expect(refused({ t: 'hello', v: 1, mode: 'turns' })).toEqual(bad('hello.mode: expected "fixed" or "lockstep"'));
    for (const hz of [0, -1, 1000.5, '20', Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(refused({ t: 'hello', v: 1, hz })).toEqual(bad('hello.hz: expected a number in (0, 1000]'));
    }
    expect(refused({ t: 'hello', v: 1, resume: '' })).toEqual(bad('hello.resume: expected a non-empty string of at most 256 characters'));
    expect(refused({ t: 'hello', v: 1, resume: 'x'.repeat(257) })).toMatchObject({ code: 'E_BAD_FIELD' });
    expect(accepted({ t: 'hello', v: 1, resume: 'x'.repeat(256) }).ok).toBe(true);
  });

  it('fields: a list of unique, non-empty names', () => {
    expect(refused({ t: 'hello', v: 1, fields: 'x' })).toEqual(bad('hello.fields: expected a list of strings'));
    expect(refused({ t: 'hello', v: 1, fields: ['x', ''] })).toEqual(
      bad('hello.fields[1]: expected a non-empty string of at most 128 characters'),
    );
    expect(refused({ t: 'hello', v: 1, fields: ['x', 3] })).toEqual(
      bad('hello.fields[1]: expected a non-empty string of at most 128 characters'),
    );
    expect(refused({ t: 'hello', v: 1, fields: ['x', 'y', 'x'] })).toEqual(bad('hello.fields[2]: duplicate field name "x"'));
    const many = Array.from({ length: LIMITS.maxFields + 1 }, (_, i) => `f${i}`);
    expect(refused({ t: 'hello', v: 1, fields: many })).toEqual({
      code: 'E_LIMIT',
      message: 'hello.fields: 257 entries exceed the limit of 256',
    });
    expect(accepted({ t: 'hello', v: 1, fields: many.slice(1) }).ok).toBe(true);
    expect(accepted({ t: 'hello', v: 1, fields: [] }).msg).toMatchObject({ fields: [] });
  });
});

describe('spawn', () => {
  it('keeps the good agents and reports each bad one alone, with its id when readable', () => {
    const result = accepted({
      t: 'spawn',
      id: 12,
      agents: [
        { id: 1, tree: 'guard' },
        'orc',
        { id: 2.5, tree: 'guard' },
        { id: 'orc-3', tree: 7 },
        { id: 4, tree: '' },
        { id: 5, tree: 'guard', label: 'x'.repeat(257) },
        { id: 6, tree: 'guard', seed: 1.5 },
        { id: 7, tree: 'guard', bb: [1] },
        { id: 'orc-8', tree: 'orc', label: 'Red/Orcs/Grunt', seed: 42, bb: { target: null }, extra: 1 },
        { tree: 'guard' },
        { id: 9, tree: 'guard', label: null, seed: null, bb: null },
      ],
    });
    expect(result.msg).toEqual({
      t: 'spawn',
      id: 12,
      agents: [
        { id: 1, tree: 'guard', label: undefined, seed: undefined, bb: undefined },
        { id: 'orc-8', tree: 'orc', label: 'Red/Orcs/Grunt', seed: 42, bb: { target: null } },
        { id: 9, tree: 'guard', label: undefined, seed: undefined, bb: undefined },
      ],
    });
    expect(result.errors).toEqual([
      { code: 'E_BAD_FIELD', message: 'spawn.agents[1]: expected a map' },
      { code: 'E_BAD_FIELD', message: `spawn.agents[2].id: ${ID_REASON}` },
      { id: 'orc-3', code: 'E_BAD_FIELD', message: 'spawn.agents[3].tree: expected a string' },
      { id: 4, code: 'E_BAD_FIELD', message: 'spawn.agents[4].tree: expected a non-empty string of at most 128 characters' },
      { id: 5, code: 'E_BAD_FIELD', message: 'spawn.agents[5].label: expected a string of at most 256 characters' },
      { id: 6, code: 'E_BAD_FIELD', message: 'spawn.agents[6].seed: expected an integer' },
      { id: 7, code: 'E_BAD_FIELD', message: 'spawn.agents[7].bb: expected a map' },
      { code: 'E_BAD_FIELD', message: `spawn.agents[9].id: ${ID_REASON}` },
    ]);
    expect(result.omittedErrors).toBe(0);
  });

  it('agent ids: safe integers, or strings of 1 to 128 characters', () => {
    const ids: unknown[] = [0, -7, 2 ** 53 - 1, 'a', 'x'.repeat(128), 2 ** 53, '', 'x'.repeat(129), true, null, [1]];
    const result = accepted({ t: 'spawn', agents: ids.map((id) => ({ id, tree: 't' })) });
    expect(result.msg).toMatchObject({ agents: ids.slice(0, 5).map((id) => ({ id })) });
    expect(result.errors.map((e) => e.message)).toEqual(ids.slice(5).map((_, i) => `spawn.agents[${i + 5}].id: ${ID_REASON}`));
  });

  it('keeps every error, even past maxEntryErrors, since spawned lists every id', () => {
    const agents = Array.from({ length: LIMITS.maxEntryErrors + 20 }, (_, i) => ({ id: i }));
    const result = accepted({ t: 'spawn', agents });
    expect(result.errors).toHaveLength(LIMITS.maxEntryErrors + 20);
    expect(result.omittedErrors).toBe(0);
  });

  it('refuses a missing or oversized agents list as a whole', () => {
    expect(refused({ t: 'spawn', id: 1 })).toEqual(bad('spawn.agents: expected a list', 1));
    expect(refused({ t: 'spawn', agents: { id: 1 } })).toEqual(bad('spawn.agents: expected a list'));
    const huge = parseClientMessage({ t: 'spawn', agents: Array.from({ length: LIMITS.maxListLength + 1 }, () => null) });
    expect(huge).toEqual({ ok: false, code: 'E_LIMIT', message: `spawn.agents: ${LIMITS.maxListLength + 1} entries exceed the limit of ${LIMITS.maxListLength}` });
  });
});

describe('despawn', () => {
  it('keeps the valid ids and reports the others', () => {
    const result = accepted({ t: 'despawn', id: 2, ids: [1, 'b', '', 3.5, 4] });
    expect(result.msg).toEqual({ t: 'despawn', id: 2, ids: [1, 'b', 4] });
    expect(result.errors).toEqual([
      { code: 'E_BAD_FIELD', message: `despawn.ids[2]: ${ID_REASON}` },
      { code: 'E_BAD_FIELD', message: `despawn.ids[3]: ${ID_REASON}` },
    ]);
    expect(refused({ t: 'despawn', ids: 1 })).toEqual(bad('despawn.ids: expected a list'));
  });

  it('returns the decoded list itself when every id is valid', () => {
    const value = { t: 'despawn', ids: [1, 2, 3] };
    const result = parseClientMessage(value);
    expect(result.ok && result.msg.t === 'despawn' && result.msg.ids).toBe(value.ids);
    expect(result.ok && result.errors).toEqual([]);
  });
});

describe('bb', () => {
  it('keeps the valid [id, {key: value}] entries and reports the others', () => {
    const result = accepted({
      t: 'bb',
      set: [[1, { target: 5 }], [2], [3, 'x'], ['', {}], 'y', [4, {}, 1], ['orc', { a: [1, 2], b: null }]],
    });
    expect(result.msg).toEqual({ t: 'bb', id: undefined, set: [[1, { target: 5 }], ['orc', { a: [1, 2], b: null }]] });
    expect(result.errors).toEqual([
      { code: 'E_BAD_FIELD', message: 'bb.set[1]: expected a list [id, {key: value}]' },
      { id: 3, code: 'E_BAD_FIELD', message: 'bb.set[2][1]: expected a map' },
      { code: 'E_BAD_FIELD', message: `bb.set[3][0]: ${ID_REASON}` },
      { code: 'E_BAD_FIELD', message: 'bb.set[4]: expected a list [id, {key: value}]' },
      { code: 'E_BAD_FIELD', message: 'bb.set[5]: expected a list [id, {key: value}]' },
    ]);
    expect(refused({ t: 'bb' })).toEqual(bad('bb.set: expected a list'));
  });

  it(`keeps at most ${LIMITS.maxEntryErrors} errors and counts the rest`, () => {
    const set = Array.from({ length: LIMITS.maxEntryErrors + 50 }, () => 'bad');
    const result = accepted({ t: 'bb', set: [...set, [1, {}]] });
    expect(result.errors).toHaveLength(LIMITS.maxEntryErrors);
    expect(result.omittedErrors).toBe(50);
    expect(result.msg).toEqual({ t: 'bb', id: undefined, set: [[1, {}]] });
  });
});

describe('result', () => {
  it('keeps the valid [id, seq, status] entries and reports the others', () => {
    const result = accepted({
      t: 'result',
      results: [[1, 1, 'success'], [2, 0, 'success'], [3, 2, 'done'], [4, 2.5, 'failure'], [5, 3], 'x', [null, 1, 'failure'], ['orc', 9, 'failure']],
    });
    expect(result.msg).toEqual({ t: 'result', id: undefined, results: [[1, 1, 'success'], ['orc', 9, 'failure']] });
    expect(result.errors).toEqual([
      { id: 2, code: 'E_BAD_FIELD', message: 'result.results[1][1]: expected a positive integer (the action seq)' },
      { id: 3, code: 'E_BAD_FIELD', message: 'result.results[2][2]: expected "success" or "failure"' },
      { id: 4, code: 'E_BAD_FIELD', message: 'result.results[3][1]: expected a positive integer (the action seq)' },
      { code: 'E_BAD_FIELD', message: 'result.results[4]: expected a list [id, seq, status]' },
      { code: 'E_BAD_FIELD', message: 'result.results[5]: expected a list [id, seq, status]' },
      { code: 'E_BAD_FIELD', message: `result.results[6][0]: ${ID_REASON}` },
    ]);
    expect(refused({ t: 'result', results: null })).toEqual(bad('result.results: expected a list'));
  });
});

describe('snapshot', () => {
  it('accepts a full snapshot with rows', () => {
    const msg = {
      t: 'snapshot',
      id: 3,
      tick: 10,
      time: 0.5,
      world: { enemies: [{ x: 1, y: 2 }], at: new Date(5000) },
      agents: [[1, 0.5, 2, 'idle'], ['orc', 1, 1, null]],
      results: [[1, 1, 'success']],
      full: true,
    };
    expect(accepted(msg, { fieldCount: 3 }).msg).toEqual(msg);
    expect(accepted({ t: 'snapshot', tick: -4 }).msg).toEqual({
      t: 'snapshot',
      id: undefined,
      tick: -4,
      time: undefined,
      world: undefined,
      agents: undefined,
      results: undefined,
      full: undefined,
    });
  });

  it('tick, time, world, full', () => {
    expect(refused({ t: 'snapshot' })).toEqual(bad('snapshot.tick: expected an integer'));
    expect(refused({ t: 'snapshot', tick: 1.5 })).toEqual(bad('snapshot.tick: expected an integer'));
    expect(refused({ t: 'snapshot', tick: 2 ** 53 })).toEqual(bad('snapshot.tick: expected an integer between -(2^53 - 1) and 2^53 - 1'));
    expect(refused({ t: 'snapshot', tick: 1, time: 'now' })).toEqual(bad('snapshot.time: expected a number'));
    expect(refused({ t: 'snapshot', tick: 1, time: Number.NaN })).toEqual(bad('snapshot.time: expected a number'));
    expect(refused({ t: 'snapshot', tick: 1, world: [1] })).toEqual(bad('snapshot.world: expected a map'));
    expect(refused({ t: 'snapshot', tick: 1, world: new Date(0) })).toEqual(bad('snapshot.world: expected a map'));
    expect(refused({ t: 'snapshot', tick: 1, full: 1 })).toEqual(bad('snapshot.full: expected a boolean'));
    expect(refused({ t: 'snapshot', tick: 1, agents: 5, id: 8 })).toEqual(
      bad('snapshot.agents: expected a list of rows or a map id → {field: value}', 8),
    );
  });

  it('time is required in lockstep mode when the session says so', () => {
    expect(refused({ t: 'snapshot', tick: 1 }, { mode: 'lockstep' })).toEqual(
      bad('snapshot.time: expected a number (required in lockstep mode)'),
    );
    expect(accepted({ t: 'snapshot', tick: 1 }, { mode: 'fixed' }).ok).toBe(true);
    expect(accepted({ t: 'snapshot', tick: 1, time: 0 }, { mode: 'lockstep' }).ok).toBe(true);
  });

  it('rows: each row alone; width checked against the declared fields', () => {
    const result = accepted(
      { t: 'snapshot', tick: 1, agents: [[1, 2, 3], [2, 3], [], 'x', [true, 1, 2], ['b', 1, 2]] },
      { fieldCount: 2 },
    );
    expect(result.msg).toMatchObject({ agents: [[1, 2, 3], ['b', 1, 2]] });
    expect(result.errors).toEqual([
      { id: 2, code: 'E_BAD_FIELD', message: 'snapshot.agents[1]: expected 3 values (the id and 2 fields), got 2' },
      { code: 'E_BAD_FIELD', message: 'snapshot.agents[2]: expected a row [id, ...values]' },
      { code: 'E_BAD_FIELD', message: 'snapshot.agents[3]: expected a row [id, ...values]' },
      { code: 'E_BAD_FIELD', message: `snapshot.agents[4][0]: ${ID_REASON}` },
    ]);
    // Without a field count, widths are the session's business.
    expect(accepted({ t: 'snapshot', tick: 1, agents: [[1], [2, 3, 4]] }).errors).toEqual([]);
    expect(refused({ t: 'snapshot', tick: 1, agents: [[1, 2]] }, { fieldCount: 0 })).toEqual(
      bad('snapshot.agents: rows need fields declared in hello; without them send a map id → {field: value}'),
    );
  });

  it('rows: returns the decoded list itself when every row is valid', () => {
    const value = { t: 'snapshot', tick: 1, agents: [[1, 2], [3, 4]] };
    const result = parseClientMessage(value, { fieldCount: 1 });
    expect(result.ok && result.msg.t === 'snapshot' && result.msg.agents).toBe(value.agents);
  });

  it('map form: keys are ids, values observations; bad entries are dropped alone', () => {
    const result = accepted({ t: 'snapshot', tick: 1, agents: { '1': { hp: 3 }, orc: { hp: 1 }, '2': 5, '': {}, ['x'.repeat(129)]: {} } });
    expect(result.msg).toMatchObject({ agents: { '1': { hp: 3 }, orc: { hp: 1 } } });
    expect(result.errors).toEqual([
      { id: 2, code: 'E_BAD_FIELD', message: 'snapshot.agents["2"]: expected a map' },
      { code: 'E_BAD_FIELD', message: `snapshot.agents[""]: ${ID_REASON}` },
      { code: 'E_BAD_FIELD', message: `snapshot.agents[${JSON.stringify(`${'x'.repeat(64)}…`)}]: ${ID_REASON}` },
    ]);
    // Integer keys on the wire (a C# Dictionary<int, ...>) arrive as their decimal strings.
    const intKeys = parseClientFrame(new Uint8Array(Buffer.from('83a174a8736e617073686f74a47469636b01a66167656e74738107 80'.replace(/\s/g, ''), 'hex')), MAX);
    expect(intKeys).toMatchObject({ ok: true, msg: { agents: { '7': {} } } });
  });

  it('agentIdFromKey: decimal safe integers are integer ids, anything else a string id', () => {
    expect(agentIdFromKey('7')).toBe(7);
    expect(agentIdFromKey('-3')).toBe(-3);
    expect(agentIdFromKey('0')).toBe(0);
    expect(agentIdFromKey('07')).toBe('07');
    expect(agentIdFromKey('+7')).toBe('+7');
    expect(agentIdFromKey('-0')).toBe('-0');
    expect(agentIdFromKey('1.5')).toBe('1.5');
    expect(agentIdFromKey('9007199254740993')).toBe('9007199254740993');
    expect(agentIdFromKey('orc')).toBe('orc');
  });

  it('results ride along, with the same per-entry rules, under snapshot.results', () => {
    const result = accepted({ t: 'snapshot', tick: 1, results: [[1, 1, 'success'], [2, 1, 'ok']], agents: [[1, 'x'], 'bad'] });
    expect(result.msg).toMatchObject({ results: [[1, 1, 'success']], agents: [[1, 'x']] });
    expect(result.errors).toEqual([
      { id: 2, code: 'E_BAD_FIELD', message: 'snapshot.results[1][2]: expected "success" or "failure"' },
      { code: 'E_BAD_FIELD', message: 'snapshot.agents[1]: expected a row [id, ...values]' },
    ]);
    expect(refused({ t: 'snapshot', tick: 1, results: {} })).toEqual(bad('snapshot.results: expected a list'));
  });

  it('E_LIMIT on too many rows', () => {
    const rows = Array.from({ length: LIMITS.maxListLength + 1 }, () => [1]);
    expect(parseClientMessage({ t: 'snapshot', tick: 1, agents: rows })).toMatchObject({ ok: false, code: 'E_LIMIT' });
  });
});

describe('ping and bye', () => {
  it('ping carries an optional number n', () => {
    expect(accepted({ t: 'ping', id: 1, n: 77 }).msg).toEqual({ t: 'ping', id: 1, n: 77 });
    expect(accepted({ t: 'ping' }).msg).toEqual({ t: 'ping', id: undefined, n: undefined });
    expect(refused({ t: 'ping', n: 'x' })).toEqual(bad('ping.n: expected a number'));
  });

  it('bye', () => {
    expect(accepted({ t: 'bye' }).msg).toEqual({ t: 'bye', id: undefined });
  });
});

describe('hostile frames', () => {
  it('a "__proto__" key anywhere is refused and never reaches a prototype', () => {
    const frame = fromHex('83 a174 a2 6262 a3736574 91 92 01 81 a95f5f70726f746f5f5f 81 a1 78 c3 a26964 01'.replace(/\s/g, ''));
    expect(parseClientFrame(frame, MAX)).toEqual({ ok: false, code: 'E_PROTOCOL', message: Msg.protoKey() });
    expect((Object.prototype as Record<string, unknown>).x).toBeUndefined();
  });

  it('a JSON "__proto__" key passed to parseClientMessage stays an own key', () => {
    const value = JSON.parse('{"t":"snapshot","tick":1,"agents":{"__proto__":{"hp":1},"2":3}}') as unknown;
    const result = parseClientMessage(value) as ParseOk<SnapshotMessage>;
    expect(result.ok).toBe(true);
    const agents = result.msg.agents as Record<string, unknown>;
    expect(Object.getPrototypeOf(agents)).toBeNull();
    expect(Object.keys(agents)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).hp).toBeUndefined();
  });

  it('deep nesting is refused without a stack overflow', () => {
    const deep = Buffer.concat([fromHex('82 a174 a8736e617073686f74 a5776f726c64'), new Uint8Array(500_000).fill(0x91), fromHex('90')]);
    expect(parseClientFrame(deep, MAX)).toEqual({ ok: false, code: 'E_PROTOCOL', message: `values nest deeper than ${LIMITS.maxDepth} levels` });
  });
});
