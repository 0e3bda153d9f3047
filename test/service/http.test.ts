// Every HTTP route: probes, metrics, trees and validation, session inspection, and the lockstep
// session model over HTTP with JSON and MessagePack bodies.

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { decode, encode } from '../../src/protocol/index.js';
import { RawClient, http, start, writeFixture, TREES, type Running } from './harness.js';

let fixture: Awaited<ReturnType<typeof writeFixture>>;
let running: Running;

beforeAll(async () => {
  fixture = await writeFixture(TREES);
  // A grace of 2 s: an HTTP session idle that long is freed, and a loaded machine can leave 300 ms between two requests.
  running = await start({ trees: fixture.trees, maxAgents: 10, resumeGraceMs: 2000, maxFrameBytes: 32 * 1024, logLevel: 'error' });
});

afterAll(async () => {
  await running.close();
  await fixture.remove();
});

const get = (path: string, headers?: Record<string, string>) => http(running.base, 'GET', path, undefined, headers);
const post = (path: string, body?: unknown, headers?: Record<string, string>) => http(running.base, 'POST', path, body, headers);
const msgpack = { 'content-type': 'application/msgpack' };

describe('probes and metrics', () => {
  test('healthz and readyz', async () => {
    expect(await get('/healthz')).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await get('/readyz')).toMatchObject({ status: 200, body: { status: 'ready', workers: 0 } });
  });

  test('metrics in the Prometheus text format, service and process metrics', async () => {
    const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep' });
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'talker' }, { id: 2, tree: 'nope' }] }, 'spawned');
    await client.step({ tick: 1, time: 0 });
    const res = await get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = res.body as string;
    for (const line of [
      /^canopy_sessions\{mode="lockstep",transport="ws",connected="true"\} [1-9]/m,
      /^canopy_agents [1-9]/m,
      /^canopy_ticks_total\{mode="lockstep"\} [1-9]/m,
      /^canopy_tick_duration_seconds_bucket\{le="0.001",mode="lockstep"\} \d+/m,
      /^canopy_tick_lateness_seconds_count \d+/m,
      /^canopy_missed_ticks_total \d+/m,
      /^canopy_decisions_frames_total\{mode="lockstep"\} [1-9]/m,
      /^canopy_actions_total [1-9]/m,
      /^canopy_cancels_total \d+/m,
      /^canopy_bytes_received_total\{transport="ws"\} [1-9]/m,
      /^canopy_bytes_sent_total\{transport="ws"\} [1-9]/m,
      /^canopy_errors_total\{code="E_UNKNOWN_TREE"\} [1-9]/m,
      /^canopy_worker_event_loop_utilization\{worker="0"\} [\d.e-]+/m,
      /^process_cpu_user_seconds_total /m,
      /^nodejs_eventloop_lag_seconds /m,
    ]) {
      expect(text).toMatch(line);
    }
    await client.close();
  });
});

describe('trees', () => {
  test('GET /v1/trees lists the loaded trees; GET /v1/trees/:name gives a definition', async () => {
    const list = await get('/v1/trees');
    expect(list.status).toBe(200);
    expect((list.body as { trees: Array<{ name: string }> }).trees.map((t) => t.name)).toEqual(['alarm', 'idle', 'talker', 'walker']);
    expect((list.body as { trees: unknown[] }).trees[2]).toEqual({
      name: 'talker',
      description: null,
      blackboard: ['word'],
      nodes: 1,
      reads: { self: ['x'], world: [], dynamic: [] },
      version: 1,
      hash: expect.any(String),
      errors: [],
    });
    expect(await get('/v1/trees/walker')).toMatchObject({ status: 200, body: TREES.walker as object });
    expect(await get('/v1/trees/nope')).toMatchObject({ status: 404, body: { code: 'E_UNKNOWN_TREE', message: 'unknown tree "nope"' } });
    // MessagePack when asked for.
    const packed = await get('/v1/trees/idle', { accept: 'application/msgpack' });
    expect(packed.headers.get('content-type')).toContain('application/msgpack');
    expect(packed.body).toEqual(TREES.idle);
  });

  test('POST /v1/trees/validate: a definition in, its errors with JSON paths out', async () => {
    expect(await post('/v1/trees/validate', TREES.talker)).toMatchObject({ status: 200, body: { valid: true, errors: [] } });
    const bad = await post('/v1/trees/validate', {
      blackboard: { n: 0 },
      root: { type: 'sequence', children: [{ type: 'sequnce', children: [] }, { type: 'condition', expr: 'bb.m > (' }] },
    });
    expect(bad.status).toBe(200);
    const body = bad.body as { valid: boolean; errors: Array<Record<string, unknown>> };
    expect(body.valid).toBe(false);
    expect(body.errors.map((e) => [e.code, e.path, e.field])).toEqual([
      ['E_NODE_UNKNOWN_TYPE', 'root.children[0]', null],
      ['E_EXPR_SYNTAX', 'root.children[1]', 'expr'],
    ]);
    expect(body.errors[0]!.message).toContain("did you mean 'sequence'");
    expect(typeof body.errors[1]!.column).toBe('number');
  });

  test('POST /v1/trees/validate with { name, definition, trees }: subtrees from the body or the loaded trees; YAML text', async () => {
    const withSub = await post('/v1/trees/validate', {
      name: 'boss',
      definition: { root: { type: 'sequence', children: [{ type: 'subtree', tree: 'minion' }, { type: 'subtree', tree: 'talker' }] } },
      trees: { minion: { root: { type: 'succeed' } } },
    });
    expect(withSub.body).toEqual({ valid: true, errors: [], warnings: [], omittedErrors: 0, omittedWarnings: 0 });
    const unknown = await post('/v1/trees/validate', { name: 'boss', definition: { root: { type: 'subtree', tree: 'minon' } } });
    expect((unknown.body as { errors: Array<{ code: string }> }).errors.map((e) => e.code)).toEqual(['E_SUBTREE_UNKNOWN']);
    const yaml = await post('/v1/trees/validate', { definition: 'root:\n  type: wait\n  seconds: -1\n' });
    expect((yaml.body as { errors: Array<{ code: string; path: string; field: string }> }).errors).toMatchObject([{ code: 'E_PARAM_RANGE', path: 'root', field: 'seconds' }]);
    const broken = await post('/v1/trees/validate', { definition: 'root: [' });
    expect((broken.body as { errors: Array<{ code: string; line: number }> }).errors).toMatchObject([{ code: 'E_TREE_PARSE', line: 1 }]);
  });

  test('POST /v1/trees/validate with a MessagePack body answers in MessagePack', async () => {
    const res = await post('/v1/trees/validate', encode({ root: { type: 'wait' } }), msgpack);
    expect(res.headers.get('content-type')).toContain('application/msgpack');
    expect(res.body).toMatchObject({ valid: false, errors: [{ code: 'E_PARAM_MISSING', path: 'root' }] });
  });
});

describe('lockstep sessions over HTTP', () => {
  test('JSON: create, spawn, tick by tick, bb, despawn, inspect, delete', async () => {
    const created = await post('/v1/sessions', { fields: ['x'] });
    expect(created.status).toBe(201);
    const s = created.body as { session: string; mode: string; trees: string[]; limits: { maxAgents: number } };
    expect(s).toMatchObject({ mode: 'lockstep', hz: 0, fields: ['x'], trees: ['alarm', 'idle', 'talker', 'walker'], limits: { maxAgents: 10 } });
    const base = `/v1/sessions/${s.session}`;

    const spawned = await post(`${base}/spawn`, { agents: [{ id: 1, tree: 'talker', label: 'Red/One' }, { id: 'w', tree: 'walker' }, { id: 3, tree: 'zzz' }] });
    expect(spawned).toMatchObject({ status: 200, body: { ids: [1, 'w'], errors: [{ id: 3, code: 'E_UNKNOWN_TREE' }] } });

    expect(await post(`${base}/tick`, { tick: 10, time: 1, agents: [[1, 5]] })).toMatchObject({
      status: 200,
      body: { t: 'decisions', tick: 10, basedOn: 10, actions: [[1, 1, 'say', { word: 'hi', x: 5 }], ['w', 1, 'walk', { speed: 1 }]], done: [[1, 'success']] },
    });
    expect(await post(`${base}/bb`, { set: [[1, { word: 'yo' }], [1, { bad: 1 }]] })).toMatchObject({ status: 200, body: { errors: [{ code: 'E_UNKNOWN_KEY' }] } });
    expect(await post(`${base}/tick`, { tick: 11, time: 1.1, results: [['w', 1, 'success'], [9, 1, 'success']] })).toMatchObject({
      body: { tick: 11, actions: [[1, 2, 'say', { word: 'yo', x: 5 }]], done: [[1, 'success'], ['w', 'success']], refused: [{ id: 9, code: 'E_UNKNOWN_AGENT' }] },
    });

    const agents = await get(`${base}/agents`);
    expect(agents).toMatchObject({ status: 200, body: { session: s.session, agents: [{ id: 1, tree: 'talker', label: 'Red/One' }, { id: 'w', tree: 'walker' }] } });
    const one = await get(`${base}/agents/w`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: 'w', tree: 'walker', blackboard: { speed: 1 }, nodes: [{ type: 'action', path: 'root' }] });
    const numeric = await get(`${base}/agents/1`);
    expect(numeric.body).toMatchObject({ id: 1, blackboard: { word: 'yo' } });
    expect(await get(`${base}/agents/404`)).toMatchObject({ status: 404, body: { code: 'E_UNKNOWN_AGENT' } });

    const listed = (await get('/v1/sessions')).body as { sessions: Array<Record<string, unknown>> };
    expect(listed.sessions.find((x) => x.session === s.session)).toMatchObject({ mode: 'lockstep', transport: 'http', agents: 2, tick: 11, basedOn: 11 });
    expect(JSON.stringify(listed)).not.toContain('resume');

    expect(await post(`${base}/despawn`, { ids: [1, 2] })).toMatchObject({ body: { ids: [1], errors: [{ id: 2, code: 'E_UNKNOWN_AGENT' }] } });
    expect((await http(running.base, 'DELETE', base)).status).toBe(204);
    expect(await post(`${base}/tick`, { tick: 12, time: 2 })).toMatchObject({ status: 404, body: { code: 'E_UNKNOWN_SESSION' } });
  });

  test('MessagePack bodies in, MessagePack out, both media types', async () => {
    const created = await post('/v1/sessions', encode({}), msgpack);
    expect(created.headers.get('content-type')).toContain('application/msgpack');
    const id = (created.body as { session: string }).session;
    const spawned = await post(`/v1/sessions/${id}/spawn`, encode({ agents: [{ id: 7, tree: 'talker' }] }), { 'content-type': 'application/x-msgpack' });
    expect(spawned.body).toEqual({ ids: [7] });
    const res = await fetch(`${running.base}/v1/sessions/${id}/tick`, { method: 'POST', headers: msgpack, body: encode({ tick: 1, time: 0, agents: { '7': { x: 1 } } }) });
    expect(res.headers.get('content-type')).toContain('application/msgpack');
    expect(decode(new Uint8Array(await res.arrayBuffer()))).toEqual({
      t: 'decisions',
      tick: 1,
      basedOn: 1,
      actions: [[7, 1, 'say', { word: 'hi', x: 1 }]],
      done: [[7, 'success']],
    });
    expect(await post(`/v1/sessions/${id}/despawn`, encode({ ids: [7] }), msgpack)).toMatchObject({ body: { ids: [7] } });
    expect(await post(`/v1/sessions/${id}/tick`, Buffer.from([0xc1]), msgpack)).toMatchObject({ status: 400, body: { code: 'E_PROTOCOL' } });
    const metrics = (await get('/metrics')).body as string;
    expect(metrics).toMatch(/^canopy_bytes_received_total\{transport="http"\} [1-9]/m);
    expect(metrics).toMatch(/^canopy_bytes_sent_total\{transport="http"\} [1-9]/m);
  });

  test('MessagePack replies write integers wider than 32 bits as int64, never float64', async () => {
    const id = ((await post('/v1/sessions', encode({}), msgpack)).body as { session: string }).session;
    const big = 2 ** 40 + 1;
    await post(`/v1/sessions/${id}/spawn`, encode({ agents: [{ id: big, tree: 'talker' }] }), msgpack);
    const res = await fetch(`${running.base}/v1/sessions/${id}/tick`, { method: 'POST', headers: msgpack, body: encode({ tick: big, time: 0 }) });
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(decode(bytes)).toMatchObject({ tick: big, actions: [[big, 1, 'say', { word: 'hi', x: null }]] });
    // uint64 0xcf or int64 0xd3, followed by 2^40 + 1; no float64 (0xcb) anywhere.
    const wide = Buffer.from([0, 0, 1, 0, 0, 0, 0, 1]);
    expect(bytes.includes(Buffer.concat([Buffer.from([0xcf]), wide])) || bytes.includes(Buffer.concat([Buffer.from([0xd3]), wide]))).toBe(true);
    expect(bytes.includes(0xcb)).toBe(false);
    await http(running.base, 'DELETE', `/v1/sessions/${id}`);
  });

  test('bodies are validated like WebSocket messages: same codes, 400 { code, message }', async () => {
    const id = ((await post('/v1/sessions', {})).body as { session: string }).session;
    expect(await post(`/v1/sessions/${id}/tick`, { tick: 1 })).toMatchObject({
      status: 400,
      body: { code: 'E_BAD_FIELD', message: 'snapshot.time: expected a number (required in lockstep mode)' },
    });
    expect(await post(`/v1/sessions/${id}/spawn`, { agents: {} })).toMatchObject({ status: 400, body: { code: 'E_BAD_FIELD', message: 'spawn.agents: expected a list' } });
    expect(await post(`/v1/sessions/${id}/tick`, [1, 2])).toMatchObject({ status: 400, body: { code: 'E_PROTOCOL' } });
    const raw = await fetch(`${running.base}/v1/sessions/${id}/tick`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"tick":' });
    expect(raw.status).toBe(400);
    expect(await raw.json()).toMatchObject({ code: 'E_PROTOCOL' });
    const big = await post(`/v1/sessions/${id}/spawn`, { agents: [], pad: 'x'.repeat(40 * 1024) });
    expect(big).toMatchObject({ status: 413, body: { code: 'E_LIMIT' } });
    expect(await post('/v1/sessions', { mode: 'fixed' })).toMatchObject({ status: 400, body: { code: 'E_BAD_FIELD' } });
    expect(await post('/v1/sessions', { fields: ['a', 'a'] })).toMatchObject({ status: 400, body: { code: 'E_BAD_FIELD' } });
    const many = Array.from({ length: 12 }, (_, i) => ({ id: i, tree: 'idle' }));
    const limited = (await post(`/v1/sessions/${id}/spawn`, { agents: many })).body as { ids: unknown[]; errors: Array<{ code: string }> };
    expect(limited.ids.length).toBe(10);
    expect(limited.errors.map((e) => e.code)).toEqual(['E_LIMIT', 'E_LIMIT']);
    expect(await get('/v1/nothing')).toMatchObject({ status: 404, body: { code: 'E_NOT_FOUND' } });
  });

  test('concurrent ticks of one session run one after another, in order', async () => {
    const id = ((await post('/v1/sessions', {})).body as { session: string }).session;
    await post(`/v1/sessions/${id}/spawn`, { agents: [{ id: 1, tree: 'talker' }] });
    const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => post(`/v1/sessions/${id}/tick`, { tick: i, time: i })));
    for (const r of replies) expect(r.status).toBe(200);
    const seqs = replies.map((r) => ((r.body as { actions: unknown[][] }).actions[0]![1]));
    expect(new Set(seqs).size).toBe(10);
  });

  test('WebSocket sessions are inspectable but not driven over HTTP', async () => {
    const { client, welcome } = await RawClient.hello(running.wsUrl, { mode: 'lockstep' });
    await client.request({ t: 'spawn', agents: [{ id: 'a', tree: 'talker' }] }, 'spawned');
    expect(await get(`/v1/sessions/${welcome.session as string}/agents`)).toMatchObject({ status: 200, body: { agents: [{ id: 'a' }] } });
    expect(await post(`/v1/sessions/${welcome.session as string}/tick`, { tick: 1, time: 0 })).toMatchObject({ status: 409, body: { code: 'E_WRONG_SESSION' } });
    await client.close();
  });

  test('an idle HTTP session is freed after the grace period', async () => {
    const id = ((await post('/v1/sessions', {})).body as { session: string }).session;
    await post(`/v1/sessions/${id}/spawn`, { agents: [{ id: 1, tree: 'idle' }] });
    expect(running.server.pool.agentCount(id)).toBe(1);
    await expect.poll(async () => (await get(`/v1/sessions/${id}/agents`)).status, { timeout: 15_000 }).toBe(404);
    expect(running.server.pool.agentCount(id)).toBe(0);
  });
});
