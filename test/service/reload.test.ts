// Hot reload end to end (docs/reload.md): a real service on worker threads, real sockets. An edited tree
// file reaches running agents (restart: cancels, blackboard kept; keep: old version), an invalid edit
// changes nothing and is reported, PUT/DELETE obey API keys, and a recorded reload replays exactly.

import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CanopyClient } from '../../src/client/index.js';
import { verifyRecording } from '../../src/record/index.js';
import { crashWorkerForTests } from '../../src/service/pool/index.js';
import { http, RawClient, start, writeFixture, type Frame, type Running } from './harness.js';

/** v1: patrols (a long action) with `alert` as argument. */
const GUARD_V1 = { blackboard: { alert: 0, mood: 'calm' }, root: { type: 'action', action: 'patrol', args: { alert: 'bb.alert' } } };
/** v2: hunts; `mood` is gone, `fresh` is new (its initial value 7 applies to restarted agents). */
const GUARD_V2 = { blackboard: { alert: 0, fresh: 7 }, root: { type: 'action', action: 'hunt', args: { alert: 'bb.alert', fresh: 'bb.fresh' } } };
const GUARD_V3 = { blackboard: { alert: 0 }, root: { type: 'action', action: 'sleep', instant: true } };
const IDLE = { root: { type: 'running' } };

/** Writes a tree file the way editors do: a temp file renamed over the old one (one atomic change). */
async function save(dir: string, name: string, text: string): Promise<void> {
  const tmp = join(dir, `.${name}.tmp`);
  await writeFile(tmp, text);
  await rename(tmp, join(dir, name));
}

interface TreeEntry {
  name: string;
  version: number;
  hash: string;
  errors: Array<{ code: string; line?: number }>;
}

async function treeList(base: string, headers: Record<string, string> = {}): Promise<{ trees: TreeEntry[]; reload: { errors: unknown[]; policy: string; watch: boolean } }> {
  const res = await http(base, 'GET', '/v1/trees', undefined, headers);
  expect(res.status).toBe(200);
  return res.body as { trees: TreeEntry[]; reload: { errors: unknown[]; policy: string; watch: boolean } };
}

describe('a watched trees folder (worker threads)', () => {
  let fixture: Awaited<ReturnType<typeof writeFixture>>;
  let running: Running;

  beforeAll(async () => {
    fixture = await writeFixture({ guard: GUARD_V1, idle: IDLE });
    running = await start({ trees: fixture.trees, workers: 2, watch: true });
  });

  afterAll(async () => {
    await running.close();
    await fixture.remove();
  });

  test('an edit restarts running agents (cancels, blackboard kept), `keep` agents stay; an invalid edit changes nothing', async () => {
    const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep' });
    const spawned = await client.request(
      {
        t: 'spawn',
        agents: [
          { id: 1, tree: 'guard', bb: { alert: 5, mood: 'angry' } },
          { id: 2, tree: 'guard', bb: { alert: 9 }, reload: 'keep' },
        ],
      },
      'spawned',
    );
    expect(spawned.errors ?? []).toEqual([]);
    const first = await client.step({ tick: 1, time: 0 });
    expect(first.actions).toEqual(expect.arrayContaining([[1, 1, 'patrol', { alert: 5 }], [2, 1, 'patrol', { alert: 9 }]]));
    const before = (await treeList(running.base)).trees.find((t) => t.name === 'guard')!;
    expect(before.version).toBe(1);

    await save(fixture.trees, 'guard.json', JSON.stringify(GUARD_V2));
    const notice = await client.next('trees', (f) => f.tree === 'guard', 10_000);
    expect(notice).toMatchObject({ t: 'trees', tree: 'guard', version: 2, removed: false, policy: 'restart', restarted: 1, kept: 1 });
    expect(notice.hash).not.toBe(before.hash);

    // The next tick: agent 1 is halted (its patrol cancelled) and runs v2 from the root with `alert` kept,
    // `fresh` at its initial value; agent 2 keeps patrolling on v1 (no decisions).
    const second = await client.step({ tick: 2, time: 0.05 });
    expect(second.cancels).toEqual([[1, 1]]);
    expect(second.actions).toEqual([[1, 2, 'hunt', { alert: 5, fresh: 7 }]]);
    const agent1 = await http(running.base, 'GET', `/v1/sessions/${await sessionId(running)}/agents/1`);
    expect((agent1.body as { blackboard: Record<string, unknown> }).blackboard).toEqual({ alert: 5, fresh: 7 });
    const after = (await treeList(running.base)).trees.find((t) => t.name === 'guard')!;
    expect(after).toMatchObject({ version: 2, hash: notice.hash, errors: [] });

    // An invalid edit: the old version keeps running, the errors are reported everywhere.
    await save(fixture.trees, 'guard.json', '{ "root": { "type": "action", "action": "x" },\n  "blackboard": { "alert": 0, }\n}');
    const error = await client.next('error', (f) => f.code === 'E_RELOAD', 10_000);
    expect(String(error.message)).toContain('guard.json:2');
    const listed = await treeList(running.base);
    const guard = listed.trees.find((t) => t.name === 'guard')!;
    expect(guard.version).toBe(2);
    expect(guard.hash).toBe(notice.hash);
    expect(guard.errors).toEqual([expect.objectContaining({ code: 'E_TREE_PARSE', line: 2 })]);
    expect(listed.reload.errors).toHaveLength(1);
    const metrics = await (await fetch(`${running.base}/metrics`)).text();
    expect(metrics).toMatch(/canopy_tree_reloads_total\{result="invalid"\} 1/);
    const third = await client.step({ tick: 3, time: 0.1 });
    expect(third.cancels ?? []).toEqual([]);
    expect(third.actions ?? []).toEqual([]);

    // Fixed: v3 installs; the errors clear.
    await save(fixture.trees, 'guard.json', JSON.stringify(GUARD_V3));
    expect(await client.next('trees', (f) => f.tree === 'guard', 10_000)).toMatchObject({ version: 3, restarted: 1, kept: 1 });
    const fourth = await client.step({ tick: 4, time: 0.15 });
    expect(fourth.cancels).toEqual([[1, 2]]);
    expect(fourth.actions).toEqual([[1, 3, 'sleep', {}]]);
    expect((await treeList(running.base)).reload.errors).toEqual([]);
    // New spawns use v3; agent 2 still runs v1 (a result for its patrol is still accepted).
    await client.request({ t: 'spawn', agents: [{ id: 3, tree: 'guard' }] }, 'spawned');
    const fifth = await client.step({ tick: 5, time: 0.2, results: [[2, 1, 'success']] });
    expect(fifth.actions).toEqual(expect.arrayContaining([[3, 1, 'sleep', {}]]));
    expect(fifth.done).toEqual(expect.arrayContaining([[2, 'success']]));
    await client.close();
  });
});

async function sessionId(running: Running): Promise<string> {
  const list = await http(running.base, 'GET', '/v1/sessions');
  return (list.body as { sessions: Array<{ session: string }> }).sessions[0]!.session;
}

describe('PUT and DELETE /v1/trees/:name', () => {
  let fixture: Awaited<ReturnType<typeof writeFixture>>;
  let running: Running;
  const auth = { authorization: 'Bearer k1' };

  beforeAll(async () => {
    fixture = await writeFixture({ guard: GUARD_V1, idle: IDLE, squad: { root: { type: 'subtree', tree: 'idle' } } });
    running = await start({ trees: fixture.trees, workers: 1, apiKeys: ['k1'], reload: 'keep' });
  });

  afterAll(async () => {
    await running.close();
    await fixture.remove();
  });

  test('need the API key; install in memory; an invalid change is refused whole', async () => {
    const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep' }, { headers: auth });
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'guard' }, { id: 2, tree: 'guard', reload: 'restart' }] }, 'spawned');
    await client.step({ tick: 1, time: 0 });

    const yaml = 'blackboard: { alert: 0 }\nroot:\n  type: action\n  action: hunt\n  args: { alert: bb.alert }\n';
    const yamlBody = (headers: Record<string, string>) => ({ ...headers, 'content-type': 'text/yaml' });
    expect((await http(running.base, 'PUT', '/v1/trees/guard', new TextEncoder().encode(yaml), yamlBody({}))).status).toBe(401);
    expect((await http(running.base, 'DELETE', '/v1/trees/idle')).status).toBe(401);

    const put = await http(running.base, 'PUT', '/v1/trees/guard', new TextEncoder().encode(yaml), yamlBody(auth));
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ tree: 'guard', version: 2, removed: false, persisted: false, policy: 'keep' });
    // The service's policy is keep; agent 2 asked for restart.
    expect(await client.next('trees', (f) => f.tree === 'guard')).toMatchObject({ version: 2, policy: 'keep', restarted: 1, kept: 1 });
    const second = await client.step({ tick: 2, time: 0.05 });
    expect(second.cancels).toEqual([[2, 1]]);
    expect(second.actions).toEqual([[2, 2, 'hunt', { alert: 0 }]]);

    // Invalid: a subtree that does not exist. Nothing changes; the session hears an E_RELOAD error.
    const bad = await http(running.base, 'PUT', '/v1/trees/guard', { root: { type: 'subtree', tree: 'nowhere' } }, auth);
    expect(bad.status).toBe(422);
    expect(bad.body).toMatchObject({ code: 'E_RELOAD', errors: [expect.objectContaining({ path: expect.stringContaining('root') })] });
    await client.next('error', (f) => f.code === 'E_RELOAD');
    expect((await treeList(running.base, auth)).trees.find((t) => t.name === 'guard')).toMatchObject({ version: 2 });
    // Deleting a tree another tree uses is invalid too; deleting an unused one works.
    expect((await http(running.base, 'DELETE', '/v1/trees/idle', undefined, auth)).status).toBe(422);
    expect((await http(running.base, 'DELETE', '/v1/trees/nope', undefined, auth)).status).toBe(404);
    expect((await http(running.base, 'PUT', '/v1/trees/..%2Fx', { root: { type: 'running' } }, auth)).status).toBe(400);
    const gone = await http(running.base, 'DELETE', '/v1/trees/squad', undefined, auth);
    expect(gone).toMatchObject({ status: 200, body: { tree: 'squad', removed: true } });
    expect(await client.next('trees', (f) => f.tree === 'squad')).toMatchObject({ removed: true, hash: null });
    const spawn = await client.request({ t: 'spawn', agents: [{ id: 9, tree: 'squad' }] }, 'spawned');
    expect(spawn.errors).toEqual([expect.objectContaining({ id: 9, code: 'E_UNKNOWN_TREE' })]);
    // A new tree over HTTP, spawned at once.
    expect((await http(running.base, 'PUT', '/v1/trees/scout', { root: { type: 'action', action: 'look', instant: true } }, auth)).status).toBe(200);
    // Validation resolves subtrees among the trees in use now.
    const checked = await http(running.base, 'POST', '/v1/trees/validate', { root: { type: 'subtree', tree: 'scout' } }, auth);
    expect(checked.body).toMatchObject({ valid: true });
    await client.request({ t: 'spawn', agents: [{ id: 10, tree: 'scout' }] }, 'spawned');
    const third = await client.step({ tick: 3, time: 0.1 });
    expect(third.actions).toEqual([[10, 1, 'look', {}]]);
    await client.close();
  });

  test('a bad `reload` field of a spawn entry is refused with its path', async () => {
    const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep' }, { headers: auth });
    const spawned = await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'guard', reload: 'later' }] }, 'spawned');
    expect(spawned.errors).toEqual([expect.objectContaining({ id: 1, code: 'E_BAD_FIELD', message: expect.stringContaining('spawn.agents[0].reload') })]);
    await client.close();
  });
});

describe('after a reload', () => {
  let fixture: Awaited<ReturnType<typeof writeFixture>>;
  let running: Running;

  beforeAll(async () => {
    fixture = await writeFixture({ guard: GUARD_V1, idle: IDLE });
    // Agents on both workers, so that both replacements are shown to know the installed tree.
    running = await start({ trees: fixture.trees, workers: 2, tuning: { sessionAffinity: 0 } });
  });

  afterAll(async () => {
    await running.close();
    await fixture.remove();
  });

  test('the TypeScript client emits `trees`; a replacement worker loads the installed trees, not the folder', async () => {
    const client = await CanopyClient.connect(running.wsUrl, { mode: 'lockstep', reconnect: false });
    const heard = new Promise((resolve) => client.on('trees', resolve));
    expect((await http(running.base, 'PUT', '/v1/trees/scout', { root: { type: 'action', action: 'look', instant: true } })).status).toBe(200);
    expect(await heard).toMatchObject({ tree: 'scout', version: 1, removed: false, restarted: 0, kept: 0 });
    // The folder has no scout.json: a worker started now must still know the tree (else it fails to load).
    await crashWorkerForTests(running.server.pool, 1);
    await crashWorkerForTests(running.server.pool, 0);
    expect(await client.spawn([{ id: 1, tree: 'scout' }, { id: 2, tree: 'scout' }])).toEqual({ ids: [1, 2], errors: [] });
    const d = await client.lockstep({ tick: 1, time: 0 });
    expect(d.actions.map((a) => [a[0], a[2]])).toEqual([[1, 'look'], [2, 'look']]);
    expect(running.server.pool.workerStats().map((w) => w.agents)).toEqual([1, 1]);
    await client.close();
  });

  test('fixed mode: the tick after the install carries the cancels and the new version\'s actions', async () => {
    const { client } = await RawClient.hello(running.wsUrl, { mode: 'fixed', hz: 50 });
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'guard', bb: { alert: 2 } }] }, 'spawned');
    await client.next('decisions', (f) => Array.isArray(f.actions) && f.actions.length > 0);
    expect((await http(running.base, 'PUT', '/v1/trees/guard', GUARD_V2)).status).toBe(200);
    expect(await client.next('trees', (f) => f.tree === 'guard')).toMatchObject({ restarted: 1, kept: 0 });
    const d = await client.next('decisions', (f) => Array.isArray(f.cancels) && f.cancels.length > 0);
    expect(d.cancels).toEqual([[1, 1]]);
    expect(d.actions).toEqual([[1, 2, 'hunt', { alert: 2, fresh: 7 }]]);
    await client.close();
  });
});

describe('a recorded reload', () => {
  let fixture: Awaited<ReturnType<typeof writeFixture>>;
  let running: Running;

  beforeAll(async () => {
    fixture = await writeFixture({ guard: GUARD_V1, idle: IDLE });
    running = await start({ trees: fixture.trees, workers: 2, recordDir: join(fixture.dir, 'recordings') });
  });

  afterAll(async () => {
    await running.close();
    await fixture.remove();
  });

  test('replays exactly: the reload applies before the same tick', async () => {
    const { client, welcome } = await RawClient.hello(running.wsUrl, { mode: 'lockstep', record: true });
    const live: Frame[] = [];
    await client.request({ t: 'spawn', agents: [{ id: 1, tree: 'guard', bb: { alert: 3 } }, { id: 2, tree: 'guard', reload: 'keep' }] }, 'spawned');
    live.push(await client.step({ tick: 1, time: 0 }));
    live.push(await client.step({ tick: 2, time: 0.05 }));
    expect((await http(running.base, 'PUT', '/v1/trees/guard', GUARD_V2)).status).toBe(200);
    await client.next('trees');
    live.push(await client.step({ tick: 3, time: 0.1 }));
    await client.request({ t: 'spawn', agents: [{ id: 3, tree: 'guard' }] }, 'spawned');
    live.push(await client.step({ tick: 4, time: 0.15, results: [[2, 1, 'success']] }));
    expect(live[2]!.cancels).toEqual([[1, 1]]);
    expect(live[3]!.actions).toEqual([[3, 1, 'hunt', { alert: 0, fresh: 7 }]]);

    const session = await sessionId(running);
    const stopped = await http(running.base, 'DELETE', `/v1/sessions/${session}/recording`);
    expect(stopped.status).toBe(200);
    const file = join(fixture.dir, 'recordings', `${welcome.recording as string}.p001.canopyrec`);
    const report = await verifyRecording(file);
    expect(report).toMatchObject({ identical: true, frames: 4, ticks: 4 });
    await client.close();
  });
});
