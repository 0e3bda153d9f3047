// The inspector's pool API (watch, frames, why, onFrames) against both pools: inline and two real worker threads.
// Frames of watched agents ride on the tick reply; nothing else changes, not even the decisions.

import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentId, WatchedFrame } from '../../src/bt/index.js';
import { createAgentPool, type AgentPool, type Decisions } from '../../src/service/pool/index.js';

const DT = 0.05;
const FIELDS = ['hp', 'enemy'] as const;

/** flee (guard hp < 30, abort lower) > attack when an enemy is seen > patrol; both wait for a result. */
const GUARD = {
  blackboard: { patrols: 0 },
  root: {
    type: 'selector',
    children: [
      { type: 'action', action: 'flee', if: 'self.hp < 30', abort: 'lower' },
      { type: 'sequence', children: [{ type: 'condition', expr: 'self.enemy == true' }, { type: 'action', action: 'attack', instant: true }] },
      { type: 'sequence', children: [{ type: 'set', values: { patrols: 'bb.patrols + 1' } }, { type: 'action', action: 'patrol' }] },
    ],
  },
};

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'canopy-watch-'));
  mkdirSync(join(dir, 'trees'));
  writeFileSync(join(dir, 'trees', 'guard.json'), JSON.stringify(GUARD));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each([
  ['inline', 0],
  ['worker threads', 2],
] as const)('watching agents (%s)', (_name, workers) => {
  let pool: AgentPool;
  let n = 0;
  const received: Array<{ session: string; frames: WatchedFrame[] }> = [];
  const open = (ids: AgentId[]): string => {
    const s = `w${++n}`;
    pool.createSession(s, { fields: FIELDS, maxAgents: 1000 });
    pool.spawn(s, ids.map((id) => ({ id, tree: 'guard' })));
    return s;
  };
  const tick = (s: string, k: number): Promise<Decisions> => pool.tick(s, k, k * DT, DT, k);

  beforeAll(async () => {
    pool = await createAgentPool({ trees: join(dir, 'trees'), workers });
    await pool.ready();
    pool.onFrames = (session, frames) => received.push({ session, frames });
  });
  afterAll(() => pool.close());

  it('records frames only for watched agents, hands the newest to onFrames each tick, and explains a tick', async () => {
    const ids: AgentId[] = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? i : `n${i}`));
    const s = open(ids);
    expect(await pool.watch(s, 'nobody', 100)).toBe(false);
    expect(await pool.watch('no-such-session', 1, 100)).toBe(false);
    expect(await pool.watch(s, 4, 100)).toBe(true);
    expect(await pool.watch(s, 'n7', 2)).toBe(true);
    received.length = 0;
    for (let k = 1; k <= 3; k++) {
      pool.observe(s, ids.map((id) => [id, k === 3 ? 10 : 80, false]), true);
      await tick(s, k);
    }
    const mine = received.filter((r) => r.session === s);
    expect(mine).toHaveLength(3);
    for (const [k, r] of mine.entries()) {
      expect(r.frames.map((f) => f.agent).toSorted()).toEqual([4, 'n7'].toSorted());
      for (const f of r.frames) expect(f.frame.tick).toBe(k + 1);
    }
    const last = mine[2]!.frames.find((f) => f.agent === 4)!.frame;
    expect(last.events.map((e) => e.kind)).toEqual(['abort', 'cancel', 'action']);
    expect(last.nodes[1]).toMatchObject({ status: 'running', aborted: true, guard: true });

    expect((await pool.frames(s, 4)).map((f) => f.tick)).toEqual([1, 2, 3]);
    expect((await pool.frames(s, 4, 2)).map((f) => f.tick)).toEqual([2, 3]);
    expect((await pool.frames(s, 'n7')).map((f) => f.tick)).toEqual([2, 3]);
    expect(await pool.frames(s, 0)).toEqual([]);

    const why = (await pool.why(s, 4, 1))!;
    expect(why.tick).toBe(1);
    expect(why.checks.map((c) => [c.node, c.kind, c.source, c.value])).toEqual([
      [1, 'guard', 'self.hp < 30', false],
      [3, 'condition', 'self.enemy == true', false],
    ]);
    // Tick 2: patrol runs on; only the selector's abort "lower" check of flee's guard is evaluated.
    expect((await pool.why(s, 4, 2))!.checks.map((c) => [c.node, c.kind, c.value])).toEqual([[1, 'guard', false]]);
    expect(why.checks[0]!.term.children.map((t) => [t.text, t.value])).toEqual([['self.hp', 80], ['30', 30]]);
    expect(await pool.why(s, 'n7', 1)).toBeNull();
    expect(await pool.why(s, 0, 2)).toBeNull();
    await expect(pool.watch(s, 4, 0)).rejects.toThrow(RangeError);

    await pool.unwatch(s, 'n7');
    received.length = 0;
    await tick(s, 4);
    expect(received.flatMap((r) => r.frames.map((f) => f.agent))).toEqual([4]);
    expect(await pool.frames(s, 'n7')).toEqual([]);
  });

  it('stops watching a despawned agent (a newcomer in its slot is not watched) and calls nobody for unwatched sessions', async () => {
    const s = open([1, 2]);
    expect(await pool.watch(s, 1, 50)).toBe(true);
    await tick(s, 1);
    pool.despawn(s, [1]);
    await tick(s, 2);
    pool.spawn(s, [{ id: 3, tree: 'guard' }]);
    received.length = 0;
    await tick(s, 3);
    await tick(s, 4);
    expect(received).toEqual([]);
    expect(await pool.frames(s, 3)).toEqual([]);
    pool.destroySession(s);
  });

  it('watching changes no decision', async () => {
    const ids: AgentId[] = Array.from({ length: 40 }, (_, i) => i);
    const plain = open(ids);
    const watched = open(ids);
    for (const id of ids.filter((i) => Number(i) % 3 === 0)) await pool.watch(watched, id, 10);
    let pending: Array<[AgentId, number, 'success' | 'failure']> = [];
    let pendingW: Array<[AgentId, number, 'success' | 'failure']> = [];
    for (let k = 1; k <= 15; k++) {
      const rows = ids.map((id, i) => [id, (i * 17 + k * 11) % 100, (i + k) % 4 === 0]);
      pool.observe(plain, rows, true);
      pool.observe(watched, rows, true);
      pool.results(plain, pending);
      pool.results(watched, pendingW);
      const a = await tick(plain, k);
      const b = await tick(watched, k);
      expect(b).toEqual(a);
      const answer = (d: Decisions): Array<[AgentId, number, 'success' | 'failure']> =>
        d.actions.filter((x) => x[2] !== 'attack').map((x) => [x[0], x[1], (x[1] + k) % 3 === 0 ? 'failure' : 'success']);
      pending = answer(a);
      pendingW = answer(b);
    }
  });
});
