// Hostile input over a real socket: random bytes, random MessagePack values, and corrupted or odd
// snapshots (which exercise the rows fast path and its fallback) go to a live server with worker
// threads. Whatever arrives, the session answers the next ping, and rows that follow are read exactly.

import fc from 'fast-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { decode, encode } from '../../src/protocol/index.js';
import { RawClient, start, writeFixture, type Running } from './harness.js';

const FIELDS = ['hp', 'pos', 'name'];
const ECHO = { root: { type: 'action', action: 'see', instant: true, args: { hp: 'self.hp', pos: 'self.pos', name: 'self.name' } } };

let fixture: Awaited<ReturnType<typeof writeFixture>>;
let running: Running;

beforeAll(async () => {
  fixture = await writeFixture({ echo: ECHO });
  // No abuse limit here: the point is what each frame does, not how many bad ones are tolerated.
  running = await start({ trees: fixture.trees, workers: 2, maxAgents: 1000, tuning: { abuseLimit: 1e9 } });
});

afterAll(async () => {
  await running.close();
  await fixture.remove();
});

/** A frame that would legitimately end the session (bye) is not hostile input; it is left out. */
function endsSession(bytes: Uint8Array): boolean {
  try {
    const v = decode(bytes) as { t?: unknown };
    return v !== null && typeof v === 'object' && (v.t === 'bye' || v.t === 'hello');
  } catch {
    return false;
  }
}

const rowValue = fc.oneof(fc.double(), fc.integer(), fc.boolean(), fc.constant(null), fc.string({ maxLength: 6 }), fc.array(fc.double(), { maxLength: 4 }), fc.object({ maxDepth: 1 }));
const snapshot = fc.record({
  t: fc.constant('snapshot'),
  tick: fc.oneof(fc.nat(), fc.string({ maxLength: 3 })),
  time: fc.oneof(fc.double({ min: 0, max: 1e9, noNaN: true }), fc.string({ maxLength: 3 })),
  agents: fc.array(fc.array(fc.oneof(fc.nat({ max: 30 }), rowValue), { maxLength: 5 }), { maxLength: 8 }),
});
const frame = fc.oneof(
  fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)),
  fc.anything({ maxDepth: 3 }).map((v) => encode(v)),
  snapshot.map((s) => encode(s)),
  fc.tuple(snapshot, fc.nat(), fc.integer({ min: 0, max: 255 })).map(([s, at, byte]) => {
    const bytes = Buffer.from(encode(s));
    bytes[at % bytes.length] = byte;
    return bytes;
  }),
  fc.tuple(snapshot, fc.nat()).map(([s, cut]) => {
    const bytes = encode(s);
    return bytes.subarray(0, cut % bytes.length);
  }),
);

test('any sequence of hostile frames: the session answers the next ping, and good rows after them are read exactly', async () => {
  const { client } = await RawClient.hello(running.wsUrl, { mode: 'lockstep', fields: FIELDS });
  const ids = Array.from({ length: 20 }, (_, i) => i);
  await client.request({ t: 'spawn', agents: ids.map((id) => ({ id, tree: 'echo' })) }, 'spawned');
  let n = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(frame, { minLength: 1, maxLength: 6 }), async (frames) => {
      for (const bytes of frames) if (!endsSession(bytes)) client.sendRaw(bytes);
      n++;
      expect((await client.request({ t: 'ping', n }, 'pong')).n).toBe(n);
    }),
    { numRuns: 150 },
  );
  // Every bad frame got a precise error; none was a bug of ours.
  expect(client.frames.filter((f) => f.t === 'error' && f.code === 'E_INTERNAL')).toEqual([]);
  expect(client.frames.some((f) => f.t === 'error' && f.code === 'E_PROTOCOL')).toBe(true);
  // The server took every frame; the session, its agents and its rows still work exactly.
  // The largest finite time: a hostile frame may have been a valid snapshot with a huge time, and time never goes back.
  const time = Number.MAX_VALUE;
  const rows = ids.map((id) => [id, id * 1.5, [id, 100 - id], `n${id}`]);
  const d = await client.step({ tick: 1e6, time, agents: rows });
  const seen = (d.actions as Array<[number, number, string, Record<string, unknown>]>).filter((a) => a[0] < 20).map((a) => [a[0], a[3]]);
  expect(seen.toSorted((a, b) => (a[0] as number) - (b[0] as number))).toEqual(ids.map((id) => [id, { hp: id * 1.5, pos: [id, 100 - id], name: `n${id}` }]));
  await client.close();
});
