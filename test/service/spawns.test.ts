// Spawn orders packed for the workers (src/service/pool/spawns.ts): every field of every agent comes out as it went
// in, through the structured clone postMessage uses and through the slicer's parts.

import { deserialize, serialize } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { SpawnBatchBuilder, packSpawnOrders, spawnOrderAt, spawnPart, type SpawnBatch } from '../../src/service/pool/spawns.js';
import type { SpawnOrder } from '../../src/service/pool/wire.js';

/** Integer and string ids mixed, several trees and labels, some seeds, blackboards and intervals. */
function orders(n: number): SpawnOrder[] {
  return Array.from({ length: n }, (_, i): SpawnOrder => {
    const id = i % 4 === 1 ? `npc-${i}` : i % 4 === 2 ? 1_000_000 + i : i === 7 ? -5 : i;
    const order: SpawnOrder = [n - i, id, i % 3 === 0 ? 'guard' : 'squad', i % 5 === 0 ? `Red/${i}` : '', i % 2 === 0 ? i * 13 : null, i % 6 === 0 ? { speed: i, tag: `t${i}` } : null];
    if (i % 7 === 0 && i > 0) order.push(i % 20 + 2);
    return order;
  });
}

const all = (b: SpawnBatch): SpawnOrder[] => Array.from({ length: b.count }, (_, i) => spawnOrderAt(b, i));

describe('packed spawn orders', () => {
  it('give back every agent as it went in, after a structured clone too', () => {
    const want = orders(250);
    const batch = packSpawnOrders(want);
    expect(batch.count).toBe(250);
    expect(all(batch)).toEqual(want);
    expect(all(deserialize(serialize(batch)) as SpawnBatch)).toEqual(want);
    // Tree names and labels travel once per message, not once per agent.
    expect(batch.trees).toEqual(['guard', 'squad']);
    expect(new Set(batch.labels).size).toBe(batch.labels.length);
  });

  it('all-integer ids carry no string table, and defaults (no seed, no blackboard, interval 1) no columns', () => {
    const b = new SpawnBatchBuilder(3);
    for (let i = 0; i < 3; i++) b.add(i, i * 10, 'guard', '', null, null, 1);
    const batch = b.build();
    expect(batch.names).toBeNull();
    expect(batch.every).toBeNull();
    expect(batch.bbs).toBeNull();
    expect(all(batch)).toEqual([[0, 0, 'guard', '', null, null], [1, 10, 'guard', '', null, null], [2, 20, 'guard', '', null, null]]);
  });

  it('a builder filled below its capacity builds only what it holds', () => {
    const b = new SpawnBatchBuilder(10);
    b.add(4, 'x', 'guard', 'L', 1, { a: 1 }, 3);
    expect(b.full).toBe(false);
    const batch = b.build();
    expect(batch.slots.length).toBe(1);
    expect(all(deserialize(serialize(batch)) as SpawnBatch)).toEqual([[4, 'x', 'guard', 'L', 1, { a: 1 }, 3]]);
  });

  it('parts (the slicer on a worker) hold their agents, blackboards renumbered', () => {
    const want = orders(100);
    const batch = packSpawnOrders(want);
    const got: SpawnOrder[] = [];
    for (let from = 0; from < 100; from += 32) got.push(...all(spawnPart(batch, from, Math.min(100, from + 32))));
    expect(got).toEqual(want);
  });
});
