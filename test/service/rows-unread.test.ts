// Rows the main thread never reads (docs/capacity.md): a snapshot's rows go unread to the worker threads, which check
// them exactly as the protocol's fast path does and find their own agents' rows. Whatever the frames — good ones,
// unknown ids, duplicates, malformed rows, bytes that do not decode, dense, sparse and string ids — the outcome must
// be the old path's: the same parse result and errors, the same unknown-row counts, the same decisions, byte for
// byte, as the inline pool (workers: 0) reading every row on its own thread.

import fc from 'fast-check';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentId } from '../../src/bt/index.js';
import { crashWorkerForTests, createAgentPool, MIN_STAGED_ROWS, type AgentPool } from '../../src/service/pool/index.js';
import { LIMITS, encode, parseClientFrame, parseSnapshotHead, unpackRows, type ParseOptions, type ParseResult, type SnapshotMessage } from '../../src/protocol/index.js';

const FIELDS = ['hp', 'enemy', 'dist', 'name'] as const;
const OPTIONS: ParseOptions = { fieldCount: FIELDS.length, mode: 'lockstep', packRows: true };
const MAX = LIMITS.defaultMaxFrameBytes;
const DT = 0.05;

/** Every observed value reaches a decision: attack's args read `dist`, patrol's read `name`. */
const GUARD = {
  blackboard: { speed: 1 },
  root: {
    type: 'selector',
    children: [
      {
        type: 'sequence',
        children: [
          { type: 'condition', expr: 'self.enemy == true' },
          { type: 'action', action: 'attack', instant: true, args: { d: 'self.dist', hp: 'self.hp', roll: 'rand()' } },
        ],
      },
      { type: 'action', action: 'patrol', instant: true, args: { name: 'self.name', hp: 'self.hp' } },
    ],
  },
};

let dir: string;
let inline: AgentPool;
let workers: AgentPool;
let sessionNo = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'canopy-unread-'));
  mkdirSync(join(dir, 'trees'));
  writeFileSync(join(dir, 'trees', 'guard.json'), JSON.stringify(GUARD));
  inline = await createAgentPool({ trees: join(dir, 'trees'), workers: 0 });
  // Every frame staged, however small (the default leaves frames under MIN_STAGED_ROWS rows to the main thread).
  workers = await createAgentPool({ trees: join(dir, 'trees'), workers: 2, sessionAffinity: 0, minStagedRows: 0 });
  await Promise.all([inline.ready(), workers.ready()]);
});

afterAll(async () => {
  await Promise.all([inline?.close(), workers?.close()]);
  rmSync(dir, { recursive: true, force: true });
});

/** What the service does with a frame (ws.ts): rows left to the workers where the pool can, else parsed here. */
async function serviceParse(pool: AgentPool, session: string, bytes: Uint8Array): Promise<{ parsed: ParseResult; staged: boolean }> {
  const unread = parseSnapshotHead(bytes, MAX, OPTIONS);
  const staging = unread === undefined ? null : pool.stageRows(session, bytes, unread.start, unread.count, FIELDS.length);
  const rows = staging === null ? null : await staging;
  if (unread === undefined || rows === null) return { parsed: parseClientFrame(bytes, MAX, OPTIONS), staged: false };
  return { parsed: { ...unread.parsed, msg: { ...unread.parsed.msg, agents: rows } }, staged: true };
}

/** Applies a parsed snapshot's rows (as session.applySnapshot does): the unknown-row count, or the refusal. */
function apply(pool: AgentPool, session: string, parsed: ParseResult): unknown {
  if (!parsed.ok) return { refused: parsed.code, message: parsed.message, field: parsed.field };
  const msg = parsed.msg as SnapshotMessage;
  const errors = parsed.errors;
  if (msg.agents === undefined && msg.full !== true) return { errors, unknown: 0 };
  return { errors, omitted: parsed.omittedErrors, ...pool.observe(session, (msg.agents ?? []) as Parameters<AgentPool['observe']>[1], msg.full === true) };
}

/** The parse result without its rows (their form differs by path; their effect is compared through decisions). */
function withoutRows(parsed: ParseResult): unknown {
  if (!parsed.ok) return parsed;
  const { agents: _agents, ...msg } = parsed.msg as SnapshotMessage;
  return { ...parsed, msg };
}

/** One session of the same agents in both pools. */
function open(ids: readonly AgentId[]): string {
  const s = `u${++sessionNo}`;
  for (const pool of [inline, workers]) {
    pool.createSession(s, { fields: FIELDS, maxAgents: 100_000 });
    const out = pool.spawn(s, ids.map((id, i) => ({ id, tree: 'guard', seed: i })));
    expect(out.errors).toEqual([]);
  }
  return s;
}

async function tickBoth(s: string, n: number): Promise<[string, string]> {
  const [a, b] = await Promise.all([inline.tick(s, n, n * DT, DT, n), workers.tick(s, n, n * DT, DT, n)]);
  const bytes = (d: typeof a): string => encode({ actions: d.actions, cancels: d.cancels, done: d.done, errors: d.errors }).toString('hex');
  return [bytes(a), bytes(b)];
}

const row = (id: unknown, k: number): unknown[] => [id, (k * 7) % 100, k % 3 === 0, k * 0.5, `n${k}`];

describe('rows the main thread never reads', () => {
  it('good frames of dense, sparse and string ids: staged on the workers, decisions byte-identical to the inline pool', async () => {
    const ids: AgentId[] = [];
    for (let i = 0; i < 60; i++) ids.push(i, 1_000_000 * (i + 1) + i, `npc-${i}`);
    const s = open(ids);
    for (let n = 1; n <= 4; n++) {
      // Rows in another order each tick, unknown ids among them, one agent listed twice (the last row wins).
      const rows = ids.map((id, k) => row(id, k + n));
      rows.reverse();
      if (n % 2 === 0) rows.push(row(ids[5], 99), row('ghost', 1), row(7_000_000_123, 2), row(-1, 3));
      const bytes = encode({ t: 'snapshot', tick: n, time: n * DT, agents: rows });
      const old = parseClientFrame(bytes, MAX, OPTIONS);
      const viaWorkers = await serviceParse(workers, s, bytes);
      expect(viaWorkers.staged).toBe(true);
      expect(withoutRows(viaWorkers.parsed)).toEqual(withoutRows(old));
      // What the recorder would write for a snapshot without its bytes: the same rows.
      expect(unpackRows((viaWorkers.parsed.ok && (viaWorkers.parsed.msg as SnapshotMessage).agents) as never)).toEqual(rows);
      expect(apply(workers, s, viaWorkers.parsed)).toEqual(apply(inline, s, old));
      const [a, b] = await tickBoth(s, n);
      expect(b).toBe(a);
    }
  });

  it('a frame whose rows fail the check: every worker refuses it, nothing applies, the ordinary parse gives the old errors', async () => {
    const ids = [1, 2, 3, 'x'];
    const s = open(ids);
    const good = encode({ t: 'snapshot', tick: 1, time: DT, agents: ids.map((id, k) => row(id, k)) });
    for (const pool of [inline, workers]) apply(pool, s, (await serviceParse(pool, s, good)).parsed);
    let [a, b] = await tickBoth(s, 1);
    expect(b).toBe(a);
    const bad: Uint8Array[] = [
      // A short row and a map value: refused alone (entry errors), the others applied.
      encode({ t: 'snapshot', tick: 2, time: 2 * DT, agents: [row(1, 50), [2, 1], [3, 1, true, { x: 1 }, 'm'], row('x', 51)] }),
      // A unicode string value (valid, read by the ordinary path).
      encode({ t: 'snapshot', tick: 3, time: 3 * DT, agents: [row(1, 60), [2, 5, false, 1, 'ünï']] }),
    ];
    // Bytes that do not decode inside a row: the whole frame is refused (E_PROTOCOL), nothing applied.
    const broken = Buffer.from(encode({ t: 'snapshot', tick: 4, time: 4 * DT, agents: [row(1, 70), row(2, 71)] }));
    broken[broken.length - 3] = 0xc1;
    bad.push(broken);
    for (const [k, bytes] of bad.entries()) {
      const old = parseClientFrame(bytes, MAX, OPTIONS);
      const unread = parseSnapshotHead(bytes, MAX, OPTIONS);
      expect(unread).toBeDefined();
      expect(await workers.stageRows(s, bytes, unread!.start, unread!.count, FIELDS.length)).toBeNull();
      const viaWorkers = await serviceParse(workers, s, bytes);
      expect(viaWorkers.staged).toBe(false);
      expect(viaWorkers.parsed).toEqual(old);
      expect(apply(workers, s, viaWorkers.parsed)).toEqual(apply(inline, s, old));
      [a, b] = await tickBoth(s, 2 + k);
      expect(b).toBe(a);
    }
  });

  it('routes that change between the workers\' look and the rows\' arrival: the rows are routed on the main thread', async () => {
    const s = open([1, 2, 3]);
    const bytes = encode({ t: 'snapshot', tick: 1, time: DT, agents: [row(1, 1), row(2, 2), row(3, 3), row(4, 4)] });
    const unread = parseSnapshotHead(bytes, MAX, OPTIONS)!;
    const staged = await workers.stageRows(s, bytes, unread.start, unread.count, FIELDS.length);
    expect(staged?.unknown).toBe(1);
    // Agent 4 arrives, agent 2 goes: the staged rows no longer match the routes.
    for (const pool of [inline, workers]) {
      pool.spawn(s, [{ id: 4, tree: 'guard', seed: 9 }]);
      pool.despawn(s, [2]);
    }
    expect(workers.observe(s, staged!, false)).toEqual(inline.observe(s, parseClientFrame(bytes, MAX, OPTIONS).ok ? ((parseClientFrame(bytes, MAX, OPTIONS) as { msg: SnapshotMessage }).msg.agents as never) : [], false));
    const [a, b] = await tickBoth(s, 1);
    expect(b).toBe(a);
  });

  it('sparse and string ids: one worker finds every worker\'s rows, and learns the agents that come and go in between', async () => {
    // The stage orders the pool sends to its workers, counted.
    const spied = workers as unknown as { request: (host: number, msg: { t: string }, transfer: unknown[]) => Promise<unknown> };
    const request = spied.request.bind(spied);
    let stages = 0;
    spied.request = (host, msg, transfer) => ((stages += msg.t === 'stage' ? 1 : 0), request(host, msg, transfer));
    for (const style of ['sparse', 'string'] as const) {
      const idOf = (i: number): AgentId => (style === 'sparse' ? 1_000_000 * i + i : `npc-${i}`);
      const s = open(Array.from({ length: 40 }, (_, i) => idOf(i)));
      for (let n = 1; n <= 8; n++) {
        // After a crash the replacement worker knows no other worker's routes: whichever checks the frames is told them again.
        if (n >= 7) await crashWorkerForTests(workers, n - 7);
        // Agents go and come (on both workers) between frames; the frame lists the ones gone too.
        const gone = n > 1 && n < 7 ? [idOf(n), idOf(n + 10), idOf(n + 20)] : [];
        const born = n > 1 && n < 7 ? [{ id: idOf(100 + n), tree: 'guard', seed: n }, { id: idOf(200 + n), tree: 'guard', seed: n }] : [];
        const churned = [inline, workers].flatMap((pool) => [...pool.despawn(s, gone).errors, ...pool.spawn(s, born).errors]);
        expect(churned).toEqual([]);
        const ids = [...Array.from({ length: 40 }, (_, i) => idOf(i)), ...Array.from({ length: Math.min(n, 6) }, (_, k) => [idOf(101 + k), idOf(201 + k)]).flat()];
        const bytes = encode({ t: 'snapshot', tick: n, time: n * DT, agents: ids.map((id, k) => row(id, k + n)) });
        const old = parseClientFrame(bytes, MAX, OPTIONS);
        const unread = parseSnapshotHead(bytes, MAX, OPTIONS)!;
        stages = 0;
        const staged = await workers.stageRows(s, bytes, unread.start, unread.count, FIELDS.length);
        // One worker answered for both (its reply lists rows of each), and it knew exactly who is gone.
        expect(stages).toBe(1);
        expect(staged?.kept.map((p) => p.host).toSorted()).toEqual([0, 1]);
        expect(apply(workers, s, { ...unread.parsed, msg: { ...unread.parsed.msg, agents: staged! } })).toEqual(apply(inline, s, old));
        const [a, b] = await tickBoth(s, n);
        expect(b).toBe(a);
      }
    }
    delete (spied as { request?: unknown }).request;
  });

  it('by default a frame of fewer than MIN_STAGED_ROWS rows is read on the main thread (stageRows declines), a larger one staged', async () => {
    const defaults = await createAgentPool({ trees: join(dir, 'trees'), workers: 2 });
    try {
      await defaults.ready();
      const ids = Array.from({ length: MIN_STAGED_ROWS }, (_, i) => i);
      defaults.createSession('d', { fields: FIELDS, maxAgents: 100_000 });
      expect(defaults.spawn('d', ids.map((id) => ({ id, tree: 'guard' }))).errors).toEqual([]);
      const frame = (n: number) => encode({ t: 'snapshot', tick: 1, time: DT, agents: ids.slice(0, n).map((id) => row(id, id)) });
      const small = frame(MIN_STAGED_ROWS - 1);
      const head = parseSnapshotHead(small, MAX, OPTIONS)!;
      expect(defaults.stageRows('d', small, head.start, head.count, FIELDS.length)).toBeNull();
      const large = frame(MIN_STAGED_ROWS);
      const full = parseSnapshotHead(large, MAX, OPTIONS)!;
      const staged = await defaults.stageRows('d', large, full.start, full.count, FIELDS.length);
      expect(staged).toMatchObject({ kind: 'staged', count: MIN_STAGED_ROWS, unknown: 0 });
    } finally {
      await defaults.close();
    }
  });

  it('the inline pool reads rows itself (stageRows declines), so it decides as it always did', () => {
    const s = open([1]);
    const bytes = encode({ t: 'snapshot', tick: 1, time: DT, agents: [row(1, 1)] });
    const unread = parseSnapshotHead(bytes, MAX, OPTIONS)!;
    expect(inline.stageRows(s, bytes, unread.start, unread.count, FIELDS.length)).toBeNull();
    // Rows not last in the frame: no head, the old path.
    expect(parseSnapshotHead(encode({ t: 'snapshot', tick: 1, agents: [row(1, 1)], time: DT }), MAX, OPTIONS)).toBeUndefined();
  });

  // Random frames against a random population: the property the design rests on.
  // Mostly what the workers take; now and then what only the ordinary path reads (the whole frame then goes that way).
  const idOf = fc.oneof(
    { weight: 12, arbitrary: fc.integer({ min: 0, max: 40 }) },
    { weight: 12, arbitrary: fc.integer({ min: 0, max: 40 }).map((i) => 1_000_000 * i + i) },
    { weight: 12, arbitrary: fc.integer({ min: 0, max: 40 }).map((i) => `a-${i}`) },
    { weight: 3, arbitrary: fc.constantFrom(-5, 2 ** 40, 'ghost') },
    { weight: 1, arbitrary: fc.constantFrom(0.5, '', 'ünï') },
  );
  const number = fc.oneof(fc.integer({ min: -300, max: 300 }), fc.double({ noNaN: true }), fc.integer({ min: -(2 ** 40), max: 2 ** 40 }));
  const value = fc.oneof(
    { weight: 20, arbitrary: number },
    { weight: 4, arbitrary: fc.boolean() },
    { weight: 4, arbitrary: fc.constant(null) },
    { weight: 4, arbitrary: fc.stringMatching(/^[a-z]{0,6}$/) },
    { weight: 4, arbitrary: fc.array(number, { maxLength: 3 }) },
    { weight: 1, arbitrary: fc.constantFrom<unknown>('ünï', { x: 1 }, [1, 'a'], Array.from({ length: 16 }, (_, k) => k)) },
  );
  const rowOf = fc.oneof(
    { weight: 60, arbitrary: fc.tuple(idOf, fc.tuple(number, fc.boolean(), value, value)).map(([id, vals]) => [id, ...vals]) },
    fc.tuple(idOf, fc.array(value, { maxLength: 6 })).map(([id, vals]) => [id, ...vals]),
  );
  const frameOf = fc.record({
    rows: fc.array(rowOf, { maxLength: 30 }),
    full: fc.boolean(),
    corrupt: fc.oneof({ weight: 8, arbitrary: fc.constant(-1) }, fc.nat()),
    // Agents that come and go before the frame (spawn: true): the routes a worker checking for all of them must learn.
    churn: fc.oneof({ weight: 3, arbitrary: fc.constant([]) }, fc.array(fc.tuple(fc.boolean(), idOf), { maxLength: 5 })),
  });

  it('property: any frames, any ids: the same parse, counts and decisions as the inline pool', async () => {
    let staged = 0;
    let frameCount = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(frameOf, { minLength: 1, maxLength: 4 }), fc.integer({ min: 0, max: 2 }), async (frames, style) => {
        const ids: AgentId[] = Array.from({ length: 30 }, (_, i) => (style === 0 ? i : style === 1 ? 1_000_000 * i + i : `a-${i}`));
        const s = open(ids);
        for (const [n, f] of frames.entries()) {
          for (const [k, [spawn, id]] of f.churn.entries()) {
            const [a, b] = [inline, workers].map((pool) => (spawn ? pool.spawn(s, [{ id, tree: 'guard', seed: 100 + k }]) : pool.despawn(s, [id])));
            expect(b).toEqual(a);
          }
          const bytes = Buffer.from(encode({ t: 'snapshot', tick: n + 1, time: (n + 1) * DT, ...(f.full ? { full: true } : {}), agents: f.rows }));
          if (f.corrupt >= 0 && bytes.length > 20) bytes[20 + (f.corrupt % (bytes.length - 20))] = 0xc1;
          const old = parseClientFrame(bytes, MAX, OPTIONS);
          const viaWorkers = await serviceParse(workers, s, bytes);
          frameCount++;
          if (viaWorkers.staged) staged++;
          expect(withoutRows(viaWorkers.parsed)).toEqual(withoutRows(old));
          expect(apply(workers, s, viaWorkers.parsed)).toEqual(apply(inline, s, old));
          const [a, b] = await tickBoth(s, n + 1);
          expect(b).toBe(a);
        }
        for (const pool of [inline, workers]) pool.destroySession(s);
      }),
      { numRuns: 60 },
    );
    // The comparison means something only if the workers took a fair share of the frames.
    expect(staged).toBeGreaterThan(frameCount / 4);
  });
});
