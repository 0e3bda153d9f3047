// A lockstep snapshot applied and ticked in one message (AgentPool.tickFrame, docs/capacity.md *Round sixteen*): the
// worker holding every agent of the session checks the frame's rows, applies them, and ticks. Whatever the frames,
// the outcome must be what setWorld, observe, results and tick give on the inline pool (workers: 0), which reads
// every row on its own thread: the same decisions, byte for byte, the same result errors, the same unknown rows. A
// frame whose rows fail the check applies nothing of itself (rows, results, world) and ticks nothing, while the
// input sent before it applies; a worker that crashes replays the frames it was handed.

import { decode as decodeMsgpack } from 'msgpackr';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentId } from '../../src/bt/index.js';
import { crashWorkerForTests, createAgentPool, type AgentPool, type Decisions } from '../../src/service/pool/index.js';
import { LIMITS, encode, parseSnapshotHead, type ActionResult, type ParseOptions } from '../../src/protocol/index.js';

const FIELDS = ['x'] as const;
const OPTIONS: ParseOptions = { fieldCount: FIELDS.length, mode: 'lockstep', packRows: true };
const MAX = LIMITS.defaultMaxFrameBytes;
const DT = 0.05;

/** An action that runs until its result comes, its args what the agent saw when it started: world, blackboard, row. */
const GO = { blackboard: { mood: 1 }, root: { type: 'action', action: 'go', args: { w: 'world.w', m: 'bb.mood', x: 'self.x', r: 'rand()' } } };

/** An instant action every tick the agent ticks, with the row it sees then. */
const SEE = { root: { type: 'action', action: 'see', args: { x: 'self.x' }, instant: true } };

let dir: string;
let inline: AgentPool;
let workers: AgentPool;
let sessionNo = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'canopy-tick-frame-'));
  mkdirSync(join(dir, 'trees'));
  writeFileSync(join(dir, 'trees', 'go.json'), JSON.stringify(GO));
  writeFileSync(join(dir, 'trees', 'see.json'), JSON.stringify(SEE));
  inline = await createAgentPool({ trees: join(dir, 'trees'), workers: 0 });
  // Two workers, each session whole on one (the default affinity): its frames go in one message.
  workers = await createAgentPool({ trees: join(dir, 'trees'), workers: 2 });
  await Promise.all([inline.ready(), workers.ready()]);
});

afterAll(async () => {
  await Promise.all([inline?.close(), workers?.close()]);
  rmSync(dir, { recursive: true, force: true });
});

function open(ids: readonly AgentId[], tree = 'go', every: (i: number) => number = () => 1): string {
  const s = `f${++sessionNo}`;
  for (const pool of [inline, workers]) {
    pool.createSession(s, { fields: FIELDS, maxAgents: 1000 });
    expect(pool.spawn(s, ids.map((id, i) => ({ id, tree, seed: i, every: every(i) }))).errors).toEqual([]);
  }
  return s;
}

interface Frame {
  tick: number;
  rows: unknown[][];
  world?: unknown;
  results?: ActionResult[];
}

const bytesOf = (d: Decisions): string => encode({ actions: d.actions, cancels: d.cancels, done: d.done, errors: d.errors }).toString('hex');

/** The frame on the inline pool, as the session applies a snapshot it read: world, rows, results, then the tick. */
async function inlineFrame(s: string, f: Frame): Promise<{ decisions: string; errors: unknown; unknown: number }> {
  if (f.world !== undefined) inline.setWorld(s, f.world);
  const { unknown } = inline.observe(s, f.rows, false);
  const errors = f.results === undefined ? [] : inline.results(s, f.results);
  const d = await inline.tick(s, f.tick, f.tick * DT, DT, f.tick);
  return { decisions: bytesOf(d), errors, unknown };
}

/** The frame as bytes on the wire, handed to the workers unread; null when they refused it. */
async function workerFrame(s: string, f: Frame): Promise<{ decisions: string; errors: unknown; unknown: number } | null> {
  const bytes = encode({ t: 'snapshot', tick: f.tick, time: f.tick * DT, ...(f.world !== undefined ? { world: f.world } : {}), ...(f.results !== undefined ? { results: f.results } : {}), agents: f.rows });
  const unread = parseSnapshotHead(bytes, MAX, OPTIONS)!;
  expect(unread).toBeDefined();
  const msg = unread.parsed.msg;
  const pending = workers.tickFrame(s, f.tick, f.tick * DT, DT, f.tick, { bytes, start: unread.start, count: unread.count, width: FIELDS.length, world: msg.world, results: msg.results });
  expect(pending).not.toBeNull();
  const out = await pending!;
  return out === null ? null : { decisions: bytesOf(out.decisions), errors: out.errors, unknown: out.unknown };
}

/** The actions of decisions as bytesOf gives them. */
function actionsOf(hex: string): Array<[AgentId, number, string, Record<string, unknown>]> {
  return (decodeMsgpack(Buffer.from(hex, 'hex')) as { actions: Array<[AgentId, number, string, Record<string, unknown>]> }).actions;
}

/** Each action's seq, succeeded (every other one) or failed: the next frame's results; `unknownToo`: one for nobody. */
function resultsOf(hex: string, unknownToo: boolean): ActionResult[] {
  const out: ActionResult[] = actionsOf(hex).map(([id, seq], k) => [id, seq, k % 2 === 0 ? 'success' : 'failure']);
  if (unknownToo && out.length > 0) out.push([999, 1, 'success']);
  return out;
}

describe('a lockstep frame applied and ticked in one message (tickFrame)', () => {
  it('gives the decisions, result errors and unknown rows of setWorld, observe, results and tick on the inline pool', async () => {
    const ids = Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? `a${i}` : i % 3 === 1 ? 1_000_000 * i : i));
    const s = open(ids);
    let results: ActionResult[] = [];
    for (let tick = 1; tick <= 20; tick++) {
      // Some agents' rows missing, a row for an agent nobody has, an agent in two rows (the last wins).
      const rows = ids.filter((_, i) => (i + tick) % 4 !== 0).map((id, i) => [id, tick * 100 + i]);
      rows.push(['nobody', 1], [ids[1]!, -tick]);
      const frame: Frame = { tick, rows, ...(tick % 5 === 1 ? { world: { w: tick } } : {}), ...(results.length > 0 ? { results } : {}) };
      const [a, b] = await Promise.all([inlineFrame(s, frame), workerFrame(s, frame)]);
      expect(b, `tick ${tick}`).toEqual(a);
      expect(a.unknown).toBe(1);
      results = resultsOf(a.decisions, tick % 3 === 0);
      // A second result for an action, the other way: the first counts.
      if (results.length > 2) results.push([results[1]![0], results[1]![1], results[1]![2] === 'success' ? 'failure' : 'success']);
    }
  });

  it('each agent ticks with the last row it was sent, with level of detail too (rows sent while it waits out its interval)', async () => {
    const ids = Array.from({ length: 24 }, (_, i) => (i % 2 === 0 ? i : `s${i}`));
    for (const every of [(): number => 1, (i: number): number => [1, 2, 3][i % 3]!]) {
      const s = open(ids, 'see', every);
      let seen = 0;
      for (let tick = 1; tick <= 12; tick++) {
        // Rows missing for some agents each tick, one agent in two rows (the last wins).
        const rows = ids.filter((_, i) => (i + tick) % 3 !== 0).map((id, i) => [id, tick * 100 + i]);
        rows.push([ids[5]!, -tick]);
        const frame: Frame = { tick, rows };
        const [a, b] = await Promise.all([inlineFrame(s, frame), workerFrame(s, frame)]);
        expect(b, `tick ${tick}`).toEqual(a);
        const actions = actionsOf(a.decisions);
        expect(actions.find(([id]) => id === ids[5])?.[3].x ?? -tick).toBe(-tick);
        seen += actions.length;
      }
      expect(seen).toBeGreaterThan(ids.length * 3);
    }
  });

  it('rows that fail the check: nothing of the frame applies and nothing ticks; input sent before it applies', async () => {
    const s = open([1, 2]);
    const frame: Frame = { tick: 1, rows: [[1, 10], [2, 20]], world: { w: 1 } };
    const [a, b] = await Promise.all([inlineFrame(s, frame), workerFrame(s, frame)]);
    expect(b).toEqual(a);
    const seqs = actionsOf(a.decisions).map((x) => x[1]);
    expect(seqs).toHaveLength(2);
    for (const pool of [inline, workers]) expect(pool.setBlackboard(s, [[1, { mood: 2 }]])).toEqual([]);
    // An object as a row value: the fast path refuses the rows (the ordinary parse would read them). Agent 1's row,
    // before it, was read (into its spare observation) while the rows were checked: it must not apply either.
    const refused = await workerFrame(s, { tick: 2, rows: [[1, 11], [2, { not: 'fast' }]], world: { w: 2 }, results: [[1, seqs[0]!, 'success']] });
    expect(refused).toBeNull();
    // On the inline pool the frame never came: the blackboard write alone, then the same ticks. Tick 3: no result
    // reached the agents, both actions still run. Then agent 1's result: its action ends and starts again, with the
    // world and the row it had and the blackboard value written before the refused frame.
    const ticks = await Promise.all(
      [inline, workers].map(async (pool) => {
        const third = bytesOf(await pool.tick(s, 3, 3 * DT, DT, 1));
        expect(pool.results(s, [[1, seqs[0]!, 'success']])).toEqual([]);
        return [third, bytesOf(await pool.tick(s, 4, 4 * DT, DT, 1)), bytesOf(await pool.tick(s, 5, 5 * DT, DT, 1))];
      }),
    );
    expect(ticks[1]).toEqual(ticks[0]);
    expect(actionsOf(ticks[1]![0]!)).toEqual([]);
    const again = [...actionsOf(ticks[1]![1]!), ...actionsOf(ticks[1]![2]!)];
    expect(again.map(([id, , name, args]) => [id, name, args.w, args.m, args.x])).toEqual([[1, 'go', 1, 2, 10]]);
  });

  it('a worker that crashes replays the frames it was handed: the decisions go on as on the inline pool', async () => {
    const ids = Array.from({ length: 40 }, (_, i) => i);
    const s = open(ids);
    let results: ActionResult[] = [];
    for (let tick = 1; tick <= 12; tick++) {
      if (tick === 7 || tick === 10) {
        await crashWorkerForTests(workers, 0);
        await crashWorkerForTests(workers, 1);
      }
      const frame: Frame = { tick, rows: ids.map((id) => [id, tick * 1000 + id]), world: { w: tick }, ...(results.length > 0 ? { results } : {}) };
      const [a, b] = await Promise.all([inlineFrame(s, frame), workerFrame(s, frame)]);
      expect(b, `tick ${tick}`).toEqual(a);
      results = resultsOf(a.decisions, false);
    }
  });
});
