// Fixed mode's rows read by the workers as each frame arrives, end to end (docs/capacity.md, *Round twenty-six*): the
// same frames — good snapshots, unknown and duplicate ids, malformed rows, corrupted bytes, full snapshots — sent to
// a fixed-mode session of a service with worker threads (rows read by the worker holding the session) and of one
// with the inline pool (rows read on the main thread, as always). Every answer the client receives, errors and pongs,
// must be the same; the ticks then see the last row each agent was sent, and `basedOn` names that frame.

import fc from 'fast-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { RawClient, start, writeFixture, type Running } from './harness.js';
import { ECHO, FIELDS, countsByPath, expectSameAnswersToDrawn, rowArbitraries, snapshotBytes } from './snapshot-frames.js';

let fixture: Awaited<ReturnType<typeof writeFixture>>;
let workers: Running;
let inline: Running;

beforeAll(async () => {
  fixture = await writeFixture({ echo: ECHO });
  // Every frame read by the worker, however small (the default leaves frames under MIN_STAGED_ROWS rows to the main thread).
  const options = { trees: fixture.trees, maxAgents: 1000 };
  const tuning = { abuseLimit: 1e9, minStagedRows: 0 };
  [workers, inline] = await Promise.all([start({ ...options, workers: 2, tuning }), start({ ...options, workers: 0, tuning })]);
});

afterAll(async () => {
  await Promise.all([workers?.close(), inline?.close()]);
  await fixture?.remove();
});

const { id, row } = rowArbitraries((i) => 1_000_000 * (i + 1) + i);
const snapshot = fc.record({
  agents: fc.array(row, { maxLength: 12 }),
  full: fc.oneof({ weight: 5, arbitrary: fc.constant(false) }, fc.constant(true)),
  results: fc.array(fc.tuple(id, fc.nat({ max: 3 }), fc.constantFrom('success', 'failure')), { maxLength: 2 }),
  corrupt: fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }))),
});

test('fixed mode: the same frames to a service with worker threads and to the inline pool: the same answers, frame for frame', async () => {
  const ids = Array.from({ length: 26 }, (_, i) => [i, 1_000_000 * (i + 1) + i, `a${i}`]).flat();
  const open = async (r: Running): Promise<RawClient> => {
    const { client } = await RawClient.hello(r.wsUrl, { mode: 'fixed', hz: 20, fields: FIELDS });
    await client.request({ t: 'spawn', agents: ids.map((agent) => ({ id: agent, tree: 'echo' })) }, 'spawned');
    return client;
  };
  // The service's own count of how it read each fixed-mode snapshot (canopy_fixed_snapshots_total), before and after.
  const paths = (): Promise<Record<string, number>> => countsByPath(workers.server.metrics.fixedSnapshotPaths);
  const pathsBefore = await paths();
  const clients = await Promise.all([open(workers), open(inline)]);
  // Decisions come on each service's own clock: left out.
  const drawn = await expectSameAnswersToDrawn(
    clients,
    snapshot,
    (s, tick) => snapshotBytes({ t: 'snapshot', id: tick, tick, ...(s.full ? { full: true } : {}), ...(s.results.length > 0 ? { results: s.results } : {}) }, s.agents, false, s.corrupt),
    20261129,
    (t) => t !== 'decisions',
  );
  let tick = drawn.tick;
  const pathsAfter = await paths();
  const delta = (path: string): number => (pathsAfter[path] ?? 0) - (pathsBefore[path] ?? 0);
  expect(delta('worker'), 'frames read by the worker').toBeGreaterThan(0);
  expect(delta('main_thread'), 'full snapshots and rows the fast path does not take, read on the main thread').toBeGreaterThan(0);
  expect(clients[0]!.frames.some((f) => f.t === 'error')).toBe(true);

  // Then two frames in a row, both read by the worker (a tick ordered after the last pong took whatever the main
  // thread read before): the ticks after them see the second's rows, the first's where the second has none.
  const lastTick = Math.max(0, ...clients[0]!.frames.filter((f) => f.t === 'decisions').map((f) => f.tick as number));
  await clients[0]!.next('decisions', (f) => (f.tick as number) >= lastTick + 2);
  tick++;
  const first = ids.map((agent, i) => [agent, i, [1, 2], 'first']);
  clients[0]!.send({ t: 'snapshot', tick, agents: first });
  tick++;
  clients[0]!.send({ t: 'snapshot', tick, agents: ids.filter((_, i) => i % 2 === 0).map((agent, i) => [agent, -i, [3, 4], 'second']) });
  const based = await clients[0]!.next('decisions', (f) => f.basedOn === tick, 10_000);
  const seen = new Map((based.actions as Array<[unknown, number, string, { name: string }]>).map(([agent, , , args]) => [agent, args.name]));
  expect(ids.map((agent) => [agent, seen.get(agent)])).toEqual(ids.map((agent, i) => [agent, i % 2 === 0 ? 'second' : 'first']));
  expect((await paths())['worker']).toBe(pathsAfter['worker']! + 2);
  await Promise.all(clients.map((c) => c.close()));
}, 120_000);

test('fixed mode: large frames received into frame memory and read on the main thread wait for their tick intact', async () => {
  // Frames over 32 KB arrive in the workers' frame memory, which is let go of once the message is handled. A full
  // snapshot's rows are read on the main thread and wait for the next tick in their frame, and so do the next
  // frame's (rows waiting: not for the worker), which arrives in memory of the same size: both must still be theirs
  // when that tick reads them.
  const ids = Array.from({ length: 1000 }, (_, i) => i); // the service's limit per session
  const { client } = await RawClient.hello(workers.wsUrl, { mode: 'fixed', hz: 20, fields: FIELDS });
  await client.request({ t: 'spawn', agents: ids.map((agent) => ({ id: agent, tree: 'echo' })) }, 'spawned');
  // Names of 90 characters: frames of about 100 KB, which span several socket reads (those are received into frame memory).
  const name = (k: number, i: number): string => `${k % 2 === 0 ? 'even' : 'odd'}${i % 7}`.padEnd(90, '.');
  for (let k = 1; k <= 6; k++) {
    const full = 2 * k - 1;
    const part = 2 * k;
    client.send({ t: 'snapshot', tick: full, full: true, agents: ids.map((agent, i) => [agent, k * 10_000 + i, [k, i], name(k, i)]) });
    client.send({ t: 'snapshot', tick: part, agents: ids.filter((i) => i % 10 < 7).map((agent) => [agent, 0 - agent, [-k, 0], 'part'.padEnd(90, '.')]) });
    const based = await client.next('decisions', (f) => f.basedOn === part, 10_000);
    const seen = new Map((based.actions as Array<[number, number, string, { hp: number; name: string }]>).map(([agent, , , args]) => [agent, [args.hp, args.name]]));
    expect(ids.map((i) => seen.get(i))).toEqual(ids.map((i) => (i % 10 < 7 ? [0 - i, 'part'.padEnd(90, '.')] : [k * 10_000 + i, name(k, i)])));
  }
  await client.close();
}, 60_000);
