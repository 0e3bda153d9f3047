// What the end-to-end tests of rows the main thread does not read (rows-unread-ws, read-frame-ws) send: snapshots of
// three fields drawn by fast-check — mostly rows the workers take, now and then an id or a value only the ordinary
// path reads — and the check that two services answered a batch of frames alike.

import fc from 'fast-check';
import { expect } from 'vitest';
import { encode } from '../../src/protocol/index.js';
import type { RawClient } from './harness.js';

/** The observation fields the snapshots' rows carry. */
export const FIELDS = ['hp', 'pos', 'name'];
/** A tree that acts on every tick with what its agent saw. */
export const ECHO = { root: { type: 'action', action: 'see', instant: true, args: { hp: 'self.hp', pos: 'self.pos', name: 'self.name' } } };

/**
 * Ids among 28 dense, 28 sparse (`sparse(i)`) and 28 string ones, and a few only the ordinary path reads; rows of
 * them with three values (now and then another count).
 */
export function rowArbitraries(sparse: (i: number) => number): { id: fc.Arbitrary<unknown>; row: fc.Arbitrary<unknown[]> } {
  const id = fc.oneof(
    { weight: 10, arbitrary: fc.oneof(fc.nat({ max: 27 }), fc.nat({ max: 27 }).map(sparse), fc.nat({ max: 27 }).map((i) => `a${i}`)) },
    { weight: 1, arbitrary: fc.constantFrom(-1, 0.5, '') },
  );
  const value = fc.oneof(
    { weight: 30, arbitrary: fc.oneof(fc.double(), fc.integer(), fc.boolean(), fc.constant(null), fc.stringMatching(/^[a-z0-9 ]{0,6}$/), fc.array(fc.double(), { maxLength: 4 })) },
    { weight: 1, arbitrary: fc.constantFrom<unknown>({ x: 1 }, 'ünï') },
  );
  const row = fc.oneof({ weight: 30, arbitrary: fc.tuple(id, value, value, value).map((r) => [...r]) }, fc.tuple(id, fc.array(value, { maxLength: 4 })).map(([i, v]) => [i, ...v]));
  return { id, row };
}

/**
 * Sends `frames` to each client, then a ping (`n`), and expects every client to have answered them alike since `from`
 * (its frame count before the first batch): the same frames in the same order, `decisions` left out where `keep`
 * says, the pings' request ids left out (the test client numbers requests across clients).
 */
export async function expectSameAnswers(clients: readonly RawClient[], frames: readonly Buffer[], n: number, from: readonly number[], keep: (t: unknown) => boolean = () => true): Promise<void> {
  await Promise.all(
    clients.map(async (client) => {
      for (const bytes of frames) client.sendRaw(bytes);
      expect((await client.request({ t: 'ping', n }, 'pong')).n).toBe(n);
    }),
  );
  const answers = (k: number): unknown[] =>
    clients[k]!.frames.slice(from[k]).filter((f) => keep(f.t)).map((f) => (f.t === 'pong' ? { t: 'pong', n: f.n } : f));
  expect(answers(0)).toEqual(answers(1));
}

/** A drawn snapshot's frame: `head`, then the rows (or the rows first), one byte overwritten where `corrupt` says. */
export function snapshotBytes(head: Record<string, unknown>, agents: unknown[], rowsFirst: boolean, corrupt: readonly [number, number] | null): Buffer {
  const bytes = Buffer.from(encode(rowsFirst ? { agents, ...head } : { ...head, agents }));
  if (corrupt !== null) bytes[corrupt[0] % bytes.length] = corrupt[1];
  return bytes;
}

/** A service counter's values by their `path` label (how it read each snapshot's rows). */
export async function countsByPath(counter: { get(): Promise<{ values: Array<{ labels: Record<string, unknown>; value: number }> }> }): Promise<Record<string, number>> {
  return Object.fromEntries((await counter.get()).values.map((v) => [v.labels['path'] as string, v.value]));
}

/**
 * Sends batches of 1 to 5 drawn snapshots (`frameOf` makes each one's frame, numbered from 1) to every client, and
 * expects the clients to answer each batch alike (expectSameAnswers) from now on. A fixed seed: how many frames take
 * each path depends on the frames drawn. Returns the batches sent and the last snapshot number.
 */
export async function expectSameAnswersToDrawn<S>(
  clients: readonly RawClient[],
  snapshot: fc.Arbitrary<S>,
  frameOf: (s: S, tick: number) => Buffer,
  seed: number,
  keep: (t: unknown) => boolean = () => true,
): Promise<{ batches: number; tick: number }> {
  // From here on: what the snapshots bring back (the welcome and spawn answers carry ids of their own).
  const from = clients.map((c) => c.frames.length);
  let tick = 0;
  let batches = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(snapshot, { minLength: 1, maxLength: 5 }), async (snapshots) => {
      const frames = snapshots.map((s) => frameOf(s, ++tick));
      await expectSameAnswers(clients, frames, ++batches, from, keep);
    }),
    { numRuns: 60, seed },
  );
  return { batches, tick };
}
