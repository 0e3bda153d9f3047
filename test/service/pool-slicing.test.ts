// Large spawns are worked through in slices on a worker (src/service/pool/slicer.ts): other sessions' messages go
// first, the spawning session's own messages keep their order, and the result is the same as one big spawn.

import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentId } from '../../src/bt/index.js';
import { createAgentPool, type AgentPool } from '../../src/service/pool/index.js';
import { SLICED_SPAWN, Slicer } from '../../src/service/pool/slicer.js';
import { packSpawnOrders } from '../../src/service/pool/spawns.js';
import type { SpawnOrder, TickOrder, ToHost } from '../../src/service/pool/wire.js';
import { encode } from '../../src/protocol/index.js';

const spawnOf = (session: string, n: number, first = 0): ToHost => ({
  t: 'spawn',
  session,
  fields: null,
  agents: packSpawnOrders(Array.from({ length: n }, (_, i): SpawnOrder => [first + i, first + i, 'guard', '', null, null])),
});
const tickOf = (session: string, req: number): TickOrder => ({
  t: 'tick',
  req,
  session,
  time: 0,
  dt: 0,
  clear: false,
  bb: null,
  objects: null,
  rows: null,
  frameRows: null,
  results: null,
  world: null,
  columns: -1,
  tick: req,
});

/** A slicer whose slices run when the test says, recording what it runs (a spawn as `spawn s from..to`). */
function harness(sliceMs = 0, packParts = 0): { slicer: Slicer; ran: string[]; done: () => number; step: () => boolean } {
  const ran: string[] = [];
  let finished = 0;
  const queue: Array<() => void> = [];
  const slicer = new Slicer(
    (msg) => {
      if (msg.t === 'spawn') {
        // Parts of one spawn run back to back read as one range.
        const last = /^spawn (\S+) (\d+)\.\.(\d+)$/.exec(ran.at(-1) ?? '');
        const from = msg.agents.slots[0]!;
        if (last !== null && last[1] === msg.session && Number(last[3]) + 1 === from) ran.pop();
        ran.push(`spawn ${msg.session} ${last !== null && last[1] === msg.session && Number(last[3]) + 1 === from ? last[2] : from}..${msg.agents.slots[msg.agents.count - 1]!}`);
      } else ran.push(`${msg.t} ${msg.session}${'req' in msg ? ` ${msg.req}` : ''}`);
    },
    () => finished++,
    sliceMs,
    (next) => queue.push(next),
    // A checkpoint packed in `packParts` parts (0: whole, as for a small session); each part is recorded.
    (msg) => {
      if (packParts === 0) return null;
      let part = 0;
      return (until) => {
        ran.push(`pack ${msg.session} part ${++part}${until === Infinity ? ' to the end' : ''}`);
        if (until === Infinity) part = packParts;
        if (part < packParts) return false;
        ran.push(`checkpointed ${msg.session}`);
        return true;
      };
    },
  );
  return { slicer, ran, done: () => finished, step: () => (queue.length === 0 ? false : (queue.shift()!(), true)) };
}

describe('Slicer', () => {
  it('lets small spawns and other sessions through at once, holds a large spawn and what its session sends after it', () => {
    const { slicer, ran, done, step } = harness();
    expect(slicer.take(spawnOf('a', SLICED_SPAWN))).toBe(false);
    expect(slicer.take(spawnOf('b', 100))).toBe(true);
    expect(slicer.take(tickOf('b', 1))).toBe(true);
    expect(slicer.take(tickOf('a', 2))).toBe(false);
    expect(slicer.take({ t: 'despawn', session: 'b', slots: [3] })).toBe(true);
    expect(slicer.held).toBe(3);
    // Slices of 0 ms: one step of agents each, then one held message each.
    const slices: string[][] = [];
    while (step()) slices.push(ran.splice(0));
    expect(slices).toEqual([['spawn b 0..31'], ['spawn b 32..63'], ['spawn b 64..95'], ['spawn b 96..99'], ['tick b 1'], ['despawn b']]);
    expect(done()).toBe(3);
    expect(slicer.held).toBe(0);
    // Nothing held: b's messages pass again.
    expect(slicer.take(tickOf('b', 3))).toBe(false);
  });

  it('packs a large checkpoint in parts: other sessions go between them, its own session waits for the last', () => {
    const { slicer, ran, done, step } = harness(0, 3);
    const checkpoint: ToHost = { t: 'checkpoint', req: 1, session: 'a' };
    expect(slicer.take(checkpoint)).toBe(true);
    expect(slicer.take(tickOf('a', 2))).toBe(true);
    expect(slicer.take(tickOf('b', 3))).toBe(false); // not held: the caller runs it now, before the pack's next part
    const slices: string[][] = [];
    while (step()) slices.push(ran.splice(0));
    expect(slices).toEqual([['pack a part 1'], ['pack a part 2'], ['pack a part 3', 'checkpointed a'], ['tick a 2']]);
    expect(done()).toBe(2);
    // A small session's checkpoint runs whole, at once.
    const small = harness(0, 0);
    expect(small.slicer.take({ t: 'checkpoint', req: 4, session: 'c' })).toBe(false);
    // Behind a held spawn, the pack starts when its turn comes; a message naming no session finishes it at once.
    const behind = harness(0, 3);
    behind.slicer.take(spawnOf('d', 100));
    expect(behind.slicer.take({ t: 'checkpoint', req: 5, session: 'd' })).toBe(true);
    expect(behind.ran).toEqual([]);
    expect(behind.slicer.take({ t: 'inspect', req: 9, session: '', slot: -1 })).toBe(false);
    expect(behind.ran).toEqual(['spawn d 0..99', 'pack d part 1 to the end', 'checkpointed d']);
  });

  it('serves sessions in the order their spawns came, each to its end; a message naming no session waits for all', () => {
    const { slicer, ran, step } = harness(Infinity);
    slicer.take(spawnOf('a', 100));
    slicer.take(spawnOf('b', 100));
    slicer.take(tickOf('a', 1));
    slicer.take(tickOf('b', 2));
    expect(step()).toBe(true);
    expect(ran).toEqual(['spawn a 0..99', 'tick a 1', 'spawn b 0..99', 'tick b 2']);
    ran.length = 0;
    slicer.take(spawnOf('c', 200));
    // Crash recovery's "replay done" marker: answered after everything sent before it.
    expect(slicer.take({ t: 'inspect', req: 9, session: '', slot: -1 })).toBe(false);
    expect(ran).toEqual(['spawn c 0..199']);
    expect(slicer.held).toBe(0);
  });
});

// Against real worker threads: a session that spawns thousands of agents and ticks at once sees all of them, with
// the same decisions, byte for byte, as the inline pool (no slicing there).
describe('sliced spawns on worker threads', () => {
  const TREE = {
    blackboard: { n: 0 },
    root: {
      type: 'selector',
      children: [
        { type: 'sequence', children: [{ type: 'condition', expr: 'self.hp < 30' }, { type: 'action', action: 'flee', args: { roll: 'rand()' } }] },
        { type: 'action', action: 'patrol', args: { n: 'bb.n', roll: 'rand()' } },
      ],
    },
  };
  let dir: string;
  let trees: string;
  let workers: AgentPool;
  let inline: AgentPool;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'canopy-slicing-'));
    trees = join(dir, 'trees');
    mkdirSync(trees);
    writeFileSync(join(trees, 'guard.json'), JSON.stringify(TREE));
    [workers, inline] = await Promise.all([createAgentPool({ trees, workers: 2 }), createAgentPool({ trees, workers: 0 })]);
  });

  afterAll(async () => {
    await Promise.all([workers.close(), inline.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  /** Spawns 6,000 agents (sparse, string and dense ids), ticks at once; a despawn, a respawn and two ticks more. */
  async function script(p: AgentPool, session: string): Promise<string[]> {
    p.createSession(session, { fields: ['hp'], maxAgents: 100_000 });
    const ids: AgentId[] = Array.from({ length: 6000 }, (_, i) => (i % 3 === 0 ? `npc-${i}` : i % 3 === 1 ? 5_000_000 + i : i));
    expect(p.spawn(session, ids.map((id, i) => ({ id, tree: 'guard', seed: i, bb: { n: i } }))).errors).toEqual([]);
    const out: string[] = [];
    const first: AgentId[] = [];
    for (let n = 1; n <= 3; n++) {
      if (n === 2) {
        p.despawn(session, ids.slice(0, 3000));
        p.spawn(session, ids.slice(0, 1500).map((id, i) => ({ id, tree: 'guard', seed: 7 + i })));
      }
      p.observe(session, ids.map((id, i) => [id, (i * 7 + n) % 100]), false);
      const d = await p.tick(session, n, n * 0.05, 0.05, n);
      expect(d.errors).toEqual([]);
      out.push(encode({ actions: d.actions, cancels: d.cancels, done: d.done }).toString('hex'));
      if (n === 1) first.push(...d.actions.map((a) => a[0]));
    }
    // The first tick, right behind the spawn, started every agent's first action.
    expect(new Set(first).size).toBe(6000);
    return out;
  }

  it('a tick right behind a large spawn sees every agent, with the decisions of the inline pool; other sessions tick meanwhile', async () => {
    // Another session ticking on the same workers while the large spawn is worked through.
    workers.createSession('other', { fields: ['hp'], maxAgents: 100 });
    workers.spawn('other', [{ id: 1, tree: 'guard' }]);
    const other = (async () => {
      const got: number[] = [];
      for (let n = 1; n <= 5; n++) got.push((await workers.tick('other', n, n * 0.05, 0.05, n)).actions.length);
      return got;
    })();
    const [mine, theirs, others] = await Promise.all([script(workers, 'big'), script(inline, 'big'), other]);
    expect(mine).toEqual(theirs);
    expect(others).toEqual([1, 0, 0, 0, 0]);
  });
});
