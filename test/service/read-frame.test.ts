// Fixed mode's snapshot rows read by the worker as each frame arrives (AgentPool.readFrame, docs/capacity.md *Round
// twenty-six*): the worker holding every agent of the session checks the frame's rows and reads them into spare
// observations, which the next tick swaps in. Whatever the frames — several between two ticks, frames the main
// thread reads in between (full snapshots, rows of another form), agents that come and go, level of detail, workers
// that crash — the outcome must be what observe and tick give on the inline pool, which reads every row on its own
// thread: the same decisions, byte for byte, and the same unknown rows. A frame whose rows fail the check applies
// nothing and leaves the rows read before it in place.

import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentId } from '../../src/bt/index.js';
import { crashWorkerForTests, createAgentPool, type AgentPool, type Decisions } from '../../src/service/pool/index.js';
import { LIMITS, encode, parseSnapshotHead, type ParseOptions } from '../../src/protocol/index.js';

const FIELDS = ['x', 'tag'] as const;
const OPTIONS: ParseOptions = { fieldCount: FIELDS.length, mode: 'fixed', packRows: true };
const DT = 0.05;

/** An instant action every tick the agent ticks, with the row it sees then (or none). */
const SEE = { root: { type: 'action', action: 'see', args: { x: 'self.x', tag: 'self.tag' }, instant: true } };

let dir: string;
let inline: AgentPool;
let workers: AgentPool;
let sessionNo = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'canopy-read-frame-'));
  mkdirSync(join(dir, 'trees'));
  writeFileSync(join(dir, 'trees', 'see.json'), JSON.stringify(SEE));
  inline = await createAgentPool({ trees: join(dir, 'trees'), workers: 0 });
  // Two workers, each session whole on one (the default affinity); every frame read there, however small.
  workers = await createAgentPool({ trees: join(dir, 'trees'), workers: 2, minStagedRows: 1 });
  await Promise.all([inline.ready(), workers.ready()]);
});

afterAll(async () => {
  await Promise.all([inline?.close(), workers?.close()]);
  rmSync(dir, { recursive: true, force: true });
});

function open(ids: readonly AgentId[], every: (i: number) => number = () => 1): string {
  const s = `r${++sessionNo}`;
  for (const pool of [inline, workers]) {
    pool.createSession(s, { fields: FIELDS, maxAgents: 1000 });
    expect(pool.spawn(s, ids.map((id, i) => ({ id, tree: 'see', seed: i, every: every(i) }))).errors).toEqual([]);
  }
  return s;
}

const bytesOf = (d: Decisions): string => encode({ actions: d.actions, cancels: d.cancels, done: d.done, errors: d.errors }).toString('hex');

/** A snapshot frame's bytes and where its rows are. */
function frameOf(tick: number, rows: unknown[][]): { bytes: Buffer; start: number; count: number } {
  const bytes = encode({ t: 'snapshot', tick, agents: rows });
  const unread = parseSnapshotHead(bytes, LIMITS.defaultMaxFrameBytes, OPTIONS);
  expect(unread).toBeDefined();
  return { bytes, start: unread!.start, count: unread!.count };
}

/** A frame read by the workers' path (its unknown rows), or null when refused; the inline pool observes the same rows. */
async function readBoth(s: string, tick: number, rows: unknown[][]): Promise<{ inline: number; workers: number | null }> {
  const f = frameOf(tick, rows);
  const pending = workers.readFrame(s, f.bytes, f.start, f.count, FIELDS.length);
  expect(pending, 'the frame goes to the worker').not.toBeNull();
  const read = await pending!;
  return { inline: inline.observe(s, rows, false).unknown, workers: read === null ? null : read.unknown };
}

async function tickBoth(s: string, tick: number): Promise<void> {
  const [a, b] = await Promise.all([inline.tick(s, tick, tick * DT, DT, tick), workers.tick(s, tick, tick * DT, DT, tick)]);
  expect(bytesOf(b), `tick ${tick}`).toBe(bytesOf(a));
}

describe('fixed mode: a frame read by the worker as it arrives (readFrame)', () => {
  it('several frames between ticks: each agent ticks with the last row it was sent, unknown rows counted', async () => {
    const ids = Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? `a${i}` : i % 3 === 1 ? 1_000_000 * i : i));
    const s = open(ids);
    let frameNo = 0;
    for (let tick = 1; tick <= 12; tick++) {
      // 0, 1, 2 or 3 frames before the tick, each with some agents' rows, a row for nobody, an agent twice (the last wins).
      for (let k = 0; k < tick % 4; k++) {
        frameNo++;
        const rows: unknown[][] = ids.filter((_, i) => (i + frameNo) % (k + 2) !== 0).map((id, i) => [id, frameNo * 100 + i, `f${frameNo}`]);
        rows.push(['nobody', 1, 'x'], [ids[1]!, -frameNo, 'dup']);
        const read = await readBoth(s, frameNo, rows);
        expect(read.workers).toBe(read.inline);
        expect(read.inline).toBe(1);
      }
      await tickBoth(s, tick);
    }
  });

  it('a frame whose rows fail the check applies nothing: the rows read before it stay, the tick sees them', async () => {
    const s = open([1, 2, 3]);
    expect((await readBoth(s, 1, [[1, 10, 'a'], [2, 20, 'a'], [3, 30, 'a']])).workers).toBe(0);
    // A row of one value where two are declared: refused by the check (the session reads such a frame the ordinary
    // way then, and refuses it as ever). The inline pool is not given it.
    const bad = frameOf(2, [[1, 11, 'b'], [2], [3, 31, 'b']]);
    expect(await workers.readFrame(s, bad.bytes, bad.start, bad.count, FIELDS.length)).toBeNull();
    await tickBoth(s, 1);
    // And after a tick: refused again, nothing of it seen at the next tick.
    expect(await workers.readFrame(s, bad.bytes, bad.start, bad.count, FIELDS.length)).toBeNull();
    await tickBoth(s, 2);
  });

  it('frames the main thread reads in between (full snapshots, rows as objects) land after the rows read before them', async () => {
    const ids = [1, 2, 3, 4, 5, 6];
    const s = open(ids);
    for (let tick = 1; tick <= 6; tick++) {
      await readBoth(s, tick * 10, ids.map((id) => [id, tick * 10 + id, 'worker']));
      // The main thread's rows: a full snapshot naming half the agents (the others lose their observation), or rows
      // of two agents; then, some ticks, another frame for the worker.
      const main: unknown[][] = tick % 2 === 0 ? ids.filter((id) => id % 2 === 0).map((id) => [id, -id, 'full']) : [[1, -1, 'main'], [2, -2, 'main']];
      for (const pool of [inline, workers]) pool.observe(s, main, tick % 2 === 0);
      // With rows from the main thread waiting for the tick, a frame is not read on the worker (it would land first).
      const f = frameOf(tick * 10 + 1, [[3, 333, 'late']]);
      expect(workers.readFrame(s, f.bytes, f.start, f.count, FIELDS.length)).toBeNull();
      await tickBoth(s, tick);
      if (tick % 3 === 0) await readBoth(s, tick * 10 + 2, [[4, 444, 'after']]);
    }
  });

  it('agents that come and go between frames and ticks, and level of detail', async () => {
    const ids = Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? i : `s${i}`));
    const s = open(ids, (i) => 1 + (i % 3));
    let next = 100;
    for (let tick = 1; tick <= 10; tick++) {
      await readBoth(s, tick, ids.map((id, i) => [id, tick * 10 + i, 'a']));
      // One agent goes and a new one comes (it may take the freed slot): rows read for the old one are not its.
      const gone = ids.splice(tick % ids.length, 1)[0]!;
      const born = next++;
      for (const pool of [inline, workers]) {
        expect(pool.despawn(s, [gone]).errors).toEqual([]);
        expect(pool.spawn(s, [{ id: born, tree: 'see', seed: born, every: 1 + (born % 2) }]).errors).toEqual([]);
      }
      ids.push(born);
      if (tick % 2 === 0) await readBoth(s, tick * 100, [[born, -born, 'b'], [gone, 0, 'gone']]);
      await tickBoth(s, tick);
    }
  });

  it('a worker that crashes replays the frames it read since its checkpoint: the decisions go on as on the inline pool', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => i);
    const s = open(ids);
    for (let tick = 1; tick <= 8; tick++) {
      await readBoth(s, tick, ids.map((id) => [id, tick * 1000 + id, 'a']));
      if (tick % 2 === 0) await readBoth(s, tick * 10 + 5, ids.slice(0, 5).map((id) => [id, -tick, 'b']));
      if (tick === 4 || tick === 7) {
        await crashWorkerForTests(workers, 0);
        await crashWorkerForTests(workers, 1);
      }
      await tickBoth(s, tick);
    }
    expect(workers.agentCount(s)).toBe(ids.length);
  });

  it('property: any frames between any ticks give the decisions of the inline pool', async () => {
    const row = fc.tuple(fc.nat({ max: 9 }), fc.oneof(fc.double({ noNaN: true }), fc.integer(), fc.constant(null)), fc.constantFrom('a', 'b', ''));
    const step = fc.oneof(
      { weight: 3, arbitrary: fc.array(row, { maxLength: 12 }).map((rows) => ({ kind: 'read' as const, rows })) },
      { weight: 1, arbitrary: fc.tuple(fc.array(row, { maxLength: 6 }), fc.boolean()).map(([rows, full]) => ({ kind: 'main' as const, rows, full })) },
      { weight: 2, arbitrary: fc.constant({ kind: 'tick' as const }) },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (steps) => {
        const s = open(Array.from({ length: 8 }, (_, i) => i));
        let tick = 0;
        /** Each frame's unknown rows: the workers' count and the inline pool's. */
        const unknowns: Array<[number, number]> = [];
        for (const st of [...steps, { kind: 'tick' as const }]) {
          if (st.kind === 'tick') await tickBoth(s, ++tick);
          else if (st.kind === 'main') for (const pool of [inline, workers]) pool.observe(s, st.rows, st.full);
          else {
            const f = frameOf(tick, st.rows);
            const pending = workers.readFrame(s, f.bytes, f.start, f.count, FIELDS.length);
            // Rows from the main thread wait for the tick: then the frame is read there too, as the session does.
            const read = pending === null ? null : await pending;
            if (pending !== null && read === null) throw new Error('a good frame was refused');
            const unknown = read === null ? workers.observe(s, st.rows, false).unknown : read.unknown;
            unknowns.push([unknown, inline.observe(s, st.rows, false).unknown]);
          }
        }
        expect(unknowns.filter(([a, b]) => a !== b)).toEqual([]);
        for (const pool of [inline, workers]) pool.destroySession(s);
      }),
      { numRuns: 40 },
    );
  });
});
