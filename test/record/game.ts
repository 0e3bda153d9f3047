// A small deterministic game for the recording tests: guards and followers on the bundled trees, driven
// in lockstep over a real socket with rows, results, blackboard writes, spawns, despawns and world state.

import type { Frame, RawClient } from '../service/harness.js';

export const FIELDS = ['hp', 'enemyVisible', 'enemyDist', 'enemyPos', 'pos'];

/** Guard `i` loses 0.5 × i hp per tick: its hp falls below 50 once i × t > 100. */
export function hp(i: number, t: number): number {
  return 100 - 0.5 * i * t;
}

function row(id: number | string, t: number): unknown[] {
  if (typeof id === 'string') return [id, 100, false, 99, [0, 0], id === 'f1' ? [0, 0] : [10, 0]];
  return [id, hp(id, t), (id + t) % 20 < 8, (id + t) % 7, [id, t % 5], [id, 0]];
}

/**
 * Plays `ticks` lockstep ticks; returns every decisions frame received. Actions are answered two ticks
 * later (success or failure by seq), some in `result` messages and some inside snapshots.
 */
export async function playLockstep(client: RawClient, ticks = 60): Promise<Frame[]> {
  const frames: Frame[] = [];
  const guards = [1, 2, 3, 4, 5, 6, 7, 8];
  await client.request({ t: 'spawn', agents: guards.map((id) => ({ id, tree: 'guard', label: `Red/Guards/g${id}` })) }, 'spawned');
  await client.request({ t: 'spawn', agents: [{ id: 'f1', tree: 'follower', label: 'Blue/f1', seed: 7 }, { id: 'f2', tree: 'follower' }] }, 'spawned');
  const alive = new Set<number | string>([...guards, 'f1', 'f2']);
  const owed: Array<{ due: number; result: [number | string, number, string] }> = [];
  for (let t = 1; t <= ticks; t++) {
    if (t === 10) {
      await client.request({ t: 'spawn', agents: [{ id: 9, tree: 'guard', label: 'Red/Guards/g9', seed: 3 }] }, 'spawned');
      alive.add(9);
    }
    if (t === 12) {
      // Its own threshold: the what-if change of the tree default does not touch it.
      await client.request({ t: 'spawn', agents: [{ id: 10, tree: 'guard', label: 'Red/Guards/g10', bb: { fleeBelowHp: 40 } }] }, 'spawned');
      alive.add(10);
    }
    if (t === 15) client.send({ t: 'bb', set: [[3, { waypointCount: 5 }]] });
    if (t === 25) client.send({ t: 'bb', set: [[3, { waypoint: 1 }], [404, { waypoint: 1 }]] });
    if (t === 30) {
      await client.request({ t: 'despawn', ids: [4] }, 'despawned');
      alive.delete(4);
    }
    const due = owed.filter((o) => o.due === t && alive.has(o.result[0])).map((o) => o.result);
    const inResultMessage = due.filter((r) => Number(r[1]) % 2 === 0);
    const inSnapshot = due.filter((r) => Number(r[1]) % 2 === 1);
    if (inResultMessage.length > 0) client.send({ t: 'result', results: inResultMessage });
    const snapshot: Record<string, unknown> = {
      tick: t,
      time: t * 0.1,
      agents: [...alive].map((id) => row(id, t)),
      ...(inSnapshot.length > 0 ? { results: inSnapshot } : {}),
      ...(t % 5 === 1 ? { world: { player: [t * 0.2, 0] } } : {}),
    };
    const d = await client.step(snapshot);
    frames.push(d);
    for (const a of (d.actions as Array<[number | string, number, string]> | undefined) ?? []) {
      owed.push({ due: t + 2, result: [a[0], a[1], (a[1] + t) % 3 === 0 ? 'failure' : 'success'] });
    }
  }
  return frames;
}
