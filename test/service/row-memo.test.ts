// The row position memo (src/service/pool/row-memo.ts): rows find their agents by their position in the last frame
// first. Whatever the ids (dense, sparse, strings), however the rows are reordered, and whoever comes and goes between
// frames — an id despawned and another spawned into its slot, in its row position — every agent must see its own row.
// The same goes for what the frame readers are handed from it (the ids the rows named, RowMemo.known) and for the
// routes that results naming string ids are read with (the session's IdIndex): never another agent's.

import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentId } from '../../src/bt/index.js';
import { createAgentPool, type AgentPool } from '../../src/service/pool/index.js';
import { RowMemo } from '../../src/service/pool/row-memo.js';
import { LIMITS, ResultColumns, encode, parseClientFrame, parseSnapshotHead, type ParseOptions, type SnapshotMessage } from '../../src/protocol/index.js';

const FIELDS = ['name'] as const;
const DT = 0.05;
const OPTIONS: ParseOptions = { fieldCount: FIELDS.length, mode: 'lockstep', packRows: true };
const ECHO = { root: { type: 'action', action: 'echo', instant: true, args: { name: 'self.name' } } };

let dir: string;
/** Each pool, and whether its workers find the rows (`stageRows`, each with its own memo) or the main thread does. */
const pools: Array<[string, AgentPool, boolean]> = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'canopy-memo-'));
  mkdirSync(join(dir, 'trees'));
  writeFileSync(join(dir, 'trees', 'echo.json'), JSON.stringify(ECHO));
  const inline = await createAgentPool({ trees: join(dir, 'trees'), workers: 0 });
  const workers = await createAgentPool({ trees: join(dir, 'trees'), workers: 2 });
  pools.push(['inline', inline, false], ['2 workers, rows read here', workers, false], ['2 workers, rows read there', workers, true]);
  await Promise.all(pools.map(([, p]) => p.ready()));
});

afterAll(async () => {
  await Promise.all([...new Set(pools.map(([, p]) => p))].map((p) => p.close()));
  rmSync(dir, { recursive: true, force: true });
});

/** A deterministic shuffle (a fixed LCG): the same order for the same seed. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let x = seed;
  for (let i = out.length - 1; i > 0; i--) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    const j = x % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

describe('row position memo', () => {
  for (const [style, idOf] of [
    ['dense', (k: number): AgentId => k],
    ['sparse', (k: number): AgentId => 1_000_000 * (k + 1) + k],
    ['string', (k: number): AgentId => `npc-${k}`],
  ] as const) {
    it(`${style} ids: reordered rows, agents replaced in their row position, agents back in other slots: each sees its own row`, async () => {
      for (const [name, pool, staged] of pools) {
        const s = `memo-${style}-${name}`;
        pool.createSession(s, { fields: FIELDS, maxAgents: 1000 });
        let live: AgentId[] = Array.from({ length: 40 }, (_, k) => idOf(k));
        expect(pool.spawn(s, live.map((id, k) => ({ id, tree: 'echo', seed: k }))).errors).toEqual([]);
        let order = live;
        let next = 40;
        const refused: unknown[] = [];
        // Ticks 9–11 repeat tick 8's order, long enough for the readers to take the rows' ids as known (row-memo.ts);
        // at 12 an agent is replaced in its row position.
        for (let n = 1; n <= 12; n++) {
          if (n === 3 || n === 6) order = shuffled(live, n); // ticks 1–2, 4–5, 7–8 repeat the order before them
          if (n === 4) {
            // Three agents go and three new ones take their slots and their row positions.
            const gone = new Set([order[2], order[10], order[20]]);
            pool.despawn(s, [...gone] as AgentId[]);
            const fresh = [idOf(next++), idOf(next++), idOf(next++)];
            refused.push(...pool.spawn(s, fresh.map((id, k) => ({ id, tree: 'echo', seed: 100 + k }))).errors);
            let f = 0;
            order = order.map((id) => (gone.has(id) ? fresh[f++]! : id));
            live = order;
          }
          if (n === 7) {
            // Three agents go, new ones take their slots, and the three come back elsewhere: same ids, same row
            // positions, other slots.
            const back = [order[3]!, order[11]!, order[21]!];
            pool.despawn(s, back);
            const fresh = [idOf(next++), idOf(next++), idOf(next++)];
            refused.push(...pool.spawn(s, fresh.map((id, k) => ({ id, tree: 'echo', seed: 200 + k }))).errors);
            refused.push(...pool.spawn(s, back.map((id, k) => ({ id, tree: 'echo', seed: 300 + k }))).errors);
            order = [...order, ...fresh];
            live = order;
          }
          if (n === 8) {
            // One agent goes and nobody comes: its row, still sent, names nobody now.
            pool.despawn(s, [order[5]!]);
            live = order.filter((_, k) => k !== 5);
          }
          if (n === 12) {
            const gone = order[9]!;
            pool.despawn(s, [gone]);
            const fresh = idOf(next++);
            refused.push(...pool.spawn(s, [{ id: fresh, tree: 'echo', seed: 400 }]).errors);
            order = order.map((id) => (id === gone ? fresh : id));
            live = live.map((id) => (id === gone ? fresh : id));
          }
          const rows = order.map((id) => [id, `${String(id)}@${n}`]);
          if (n === 5) rows.splice(7, 0, [idOf(999), 'ghost']);
          const bytes = encode({ t: 'snapshot', tick: n, time: n * DT, agents: rows });
          const unread = staged ? parseSnapshotHead(bytes, LIMITS.defaultMaxFrameBytes, OPTIONS) : undefined;
          const staging = unread === undefined ? null : pool.stageRows(s, bytes, unread.start, unread.count, FIELDS.length);
          const parsed = parseClientFrame(bytes, LIMITS.defaultMaxFrameBytes, OPTIONS);
          expect(parsed.ok).toBe(true);
          const rowsRead = staging === null ? (parsed.ok ? (parsed.msg as SnapshotMessage).agents : []) : await staging;
          expect(rowsRead, 'the workers took the rows').not.toBeNull();
          const observed = pool.observe(s, rowsRead as Parameters<AgentPool['observe']>[1], false);
          expect(refused).toEqual([]);
          expect(observed.unknown).toBe(n === 5 || n >= 8 ? 1 : 0);
          const out = await pool.tick(s, n, n * DT, DT, n);
          const seen = new Map(out.actions.map(([id, , , args]) => [id, (args as { name: string }).name]));
          expect(seen.size).toBe(live.length);
          for (const id of live) expect(seen.get(id), `${name}, tick ${n}, agent ${String(id)}`).toBe(`${String(id)}@${n}`);
        }
        pool.destroySession(s);
      }
    });
  }
});

describe('RowMemo.known: the rows\' ids for the next frame', () => {
  it('gives them once the rows held still over a frame, the same object while nothing changes, and a copy', () => {
    const memo = new RowMemo();
    expect(memo.known()).toBeNull(); // nothing learned
    const ids: AgentId[] = ['npc-1', 7, 'npc-3', 'n\u00e9'];
    ids.forEach((id, i) => memo.set(i, id, i));
    expect(memo.known()).toBeNull(); // learned since the last call: still changing
    const known = memo.known();
    expect(known?.ids).toEqual(ids);
    expect(memo.known()).toBe(known);
    // A value for a row's same id is no change; another id is.
    memo.set(1, 7, 5);
    expect(memo.known()).toBe(known);
    memo.set(2, 'npc-33', 2);
    expect(known?.ids).toEqual(ids);
    expect(memo.known()).toBeNull();
    expect(memo.known()?.ids).toEqual(['npc-1', 7, 'npc-33', 'n\u00e9']);
    memo.clear();
    expect(memo.known()).toBeNull();
    expect(memo.known()).toBeNull(); // nothing known after a clear
    // Integer ids only: nothing to give (they read fast as they are), however still.
    [3_000_001, 3_000_002].forEach((id, i) => memo.set(i, id, i));
    expect(memo.known()).toBeNull();
    expect(memo.known()).toBeNull();
    memo.set(2, 'npc-9', 2);
    expect(memo.known()).toBeNull();
    expect(memo.known()?.ids).toEqual([3_000_001, 3_000_002, 'npc-9']);
  });
});

describe('results read with the routes of string ids (IdIndex)', () => {
  it('reach the agent the id names when routed, even if it moved and another took its slot since the frame was read', async () => {
    const trees = join(dir, 'trees');
    writeFileSync(join(trees, 'work.json'), JSON.stringify({ root: { type: 'sequence', children: [{ type: 'action', action: 'work' }, { type: 'action', action: 'next', instant: true }] } }));
    for (const workers of [0, 2]) {
      const pool = await createAgentPool({ trees, workers });
      await pool.ready();
      try {
        const s = `filed-${workers}`;
        pool.createSession(s, { fields: FIELDS, maxAgents: 100 });
        expect(pool.spawn(s, ['npc-a', 'npc-b'].map((id) => ({ id, tree: 'work' }))).errors).toEqual([]);
        const names = (d: { actions: ReadonlyArray<readonly unknown[]> }): string[] => d.actions.map(([id, , action]) => `${String(id)}:${String(action)}`).toSorted();
        expect(names(await pool.tick(s, 1, DT, DT, 1))).toEqual(['npc-a:work', 'npc-b:work']);
        /** A snapshot's results as the service reads them: with the session's ids, so string ids come with their routes. */
        const read = (results: unknown[], tick: number): SnapshotMessage => {
          // (With rows: a frame of rows is the one the fast path reads, results included.)
          const parsed = parseClientFrame(encode({ t: 'snapshot', tick, time: tick * DT, results, agents: [['npc-b', 'b']] }), LIMITS.defaultMaxFrameBytes, { ...OPTIONS, knownIds: pool.knownIds(s)! });
          expect(parsed.ok).toBe(true);
          const msg = (parsed as { msg: SnapshotMessage }).msg;
          expect(msg.results, 'read by the fast path').toBeInstanceOf(ResultColumns);
          return msg;
        };
        // Routed as read: npc-b's work succeeds, it goes on to `next`.
        expect(pool.results(s, read([['npc-b', 1, 'success']], 2).results!)).toEqual([]);
        expect(names(await pool.tick(s, 2, 2 * DT, DT, 2))).toEqual(['npc-b:next']);
        // Read now, routed after npc-a went and npc-c came (into its slot, once freed) with work seq 1 running too.
        const stale = read([['npc-a', 1, 'success']], 3);
        pool.despawn(s, ['npc-a']);
        await pool.tick(s, 3, 3 * DT, DT, 3);
        expect(pool.spawn(s, [{ id: 'npc-c', tree: 'work' }]).errors).toEqual([]);
        expect(names(await pool.tick(s, 4, 4 * DT, DT, 4))).toEqual(['npc-c:work']);
        expect(pool.results(s, stale.results!).map((e) => [e.id, e.code])).toEqual([['npc-a', 'E_UNKNOWN_AGENT']]);
        expect(names(await pool.tick(s, 5, 5 * DT, DT, 5))).toEqual([]); // npc-c's work still runs
        pool.destroySession(s);
      } finally {
        await pool.close();
      }
    }
  });
});
