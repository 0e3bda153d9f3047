// Rows the main thread never reads, end to end: the same frames — good snapshots, unknown and duplicate ids,
// malformed rows, corrupted bytes, rows not last in the frame — sent to a service with worker threads (rows checked
// and found by the workers) and to one with the inline pool (rows read on the main thread, as always). Every frame
// the client receives back, errors and decisions alike, must be the same.

import fc from 'fast-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { RawClient, start, writeFixture, type Running } from './harness.js';
import type { AgentPool } from '../../src/service/pool/index.js';
import { ECHO, FIELDS, countsByPath, expectSameAnswersToDrawn, rowArbitraries, snapshotBytes } from './snapshot-frames.js';

let fixture: Awaited<ReturnType<typeof writeFixture>>;
/** Each session's agents on one worker: its frames applied and ticked in one message (tickFrame). */
let oneWorker: Running;
/** Each session's agents spread over both workers: its frames staged (stageRows), then ticked. */
let spread: Running;
let inline: Running;

beforeAll(async () => {
  fixture = await writeFixture({ echo: ECHO });
  // Every frame staged, however small (the default leaves frames under MIN_STAGED_ROWS rows to the main thread).
  const options = { trees: fixture.trees, maxAgents: 1000 };
  const tuning = { abuseLimit: 1e9, minStagedRows: 0 };
  [oneWorker, spread, inline] = await Promise.all([
    start({ ...options, workers: 2, tuning }),
    start({ ...options, workers: 2, tuning: { ...tuning, sessionAffinity: 0 } }),
    start({ ...options, workers: 0, tuning }),
  ]);
});

afterAll(async () => {
  await Promise.all([oneWorker?.close(), spread?.close(), inline?.close()]);
  await fixture?.remove();
});

const { id, row } = rowArbitraries((i) => 1_000_000 * i + i);
const snapshot = fc.record({
  agents: fc.array(row, { maxLength: 12 }),
  full: fc.boolean(),
  results: fc.array(fc.tuple(id, fc.nat({ max: 3 }), fc.constantFrom('success', 'failure')), { maxLength: 2 }),
  rowsFirst: fc.boolean(),
  corrupt: fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }))),
});

// Spread, dense integer ids: one worker finds every worker's rows (the routing table in shared memory); mixed: one
// worker finds them from its table of the others' routes.
test.each([
  ['one worker, mixed ids', true, false],
  ['one worker, dense integer ids', false, false],
  ['spread, mixed ids', true, true],
  ['spread, dense integer ids', false, true],
] as const)('%s: the same frames to a service with worker threads and to the inline pool: the same answers, frame for frame', async (_name, mixed, spreadOut) => {
  const withWorkers = spreadOut ? spread : oneWorker;
  const open = async (r: Running): Promise<RawClient> => {
    const { client } = await RawClient.hello(r.wsUrl, { mode: 'lockstep', fields: FIELDS });
    const ids = Array.from({ length: 26 }, (_, i) => (mixed ? [i, 1_000_000 * i + i, `a${i}`] : [i, i + 26, i + 52])).flat();
    await client.request({ t: 'spawn', agents: ids.map((agent) => ({ id: agent, tree: 'echo' })) }, 'spawned');
    return client;
  };
  // Counts the frames whose rows the workers took (the rest went the ordinary way): the comparison needs both. Each
  // service gets its counting wrappers once (a second test on it wraps the same originals).
  const pool = withWorkers.server.pool as AgentPool & { originals?: Pick<AgentPool, 'stageRows' | 'tickFrame'> };
  const originals = (pool.originals ??= { stageRows: pool.stageRows.bind(pool), tickFrame: pool.tickFrame.bind(pool) });
  let staged = 0;
  let folded = 0;
  pool.stageRows = (...args) => {
    const out = originals.stageRows(...args);
    return out === null ? null : out.then((rows) => ((staged += rows === null ? 0 : 1), rows));
  };
  pool.tickFrame = (...args) => {
    const out = originals.tickFrame(...args);
    return out === null ? null : out.then((ticked) => ((folded += ticked === null ? 0 : 1), ticked));
  };
  // The service's own count of how it read each lockstep snapshot (canopy_lockstep_snapshots_total), before and after.
  const paths = (): Promise<Record<string, number>> => countsByPath(withWorkers.server.metrics.snapshotPaths);
  const pathsBefore = await paths();
  const clients = await Promise.all([open(withWorkers), open(inline)]);
  const { batches: n } = await expectSameAnswersToDrawn(
    clients,
    snapshot,
    (s, tick) => {
      const head = { t: 'snapshot', id: tick, tick, time: tick * 0.05, ...(s.full ? { full: true } : {}), ...(s.results.length > 0 ? { results: s.results } : {}) };
      return snapshotBytes(head, s.agents, s.rowsFirst, s.corrupt);
    },
    20261123,
  );
  // Spread sessions never tick in one go. On one worker, full snapshots (and frames whose rows fail) are staged.
  expect(staged + folded).toBeGreaterThan(n / 2);
  expect(spreadOut ? folded === 0 : folded > n / 4, `${folded} of the frames in one message`).toBe(true);
  const pathsAfter = await paths();
  const delta = (path: string): number => (pathsAfter[path] ?? 0) - (pathsBefore[path] ?? 0);
  expect([delta('one_message'), delta('staged')]).toEqual([folded, staged]);
  expect(delta('main_thread')).toBeGreaterThan(0); // rows the fast path does not take, read on the main thread
  expect(clients[0]!.frames.some((f) => f.t === 'decisions')).toBe(true);
  expect(clients[0]!.frames.some((f) => f.t === 'error')).toBe(true);
  await Promise.all(clients.map((c) => c.close()));
}, 120_000);
