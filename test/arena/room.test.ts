// The arena room headless against a real Canopy service: NPCs move, chase and flee; every action the
// game started ends exactly once (a result the game sent, or a cancel from the service); no errors.

import { Client } from '@colyseus/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActionResult, Decisions } from '../../src/client/index.js';
import { startBoth, until, type Running } from './harness.js';
import { KINDS } from '../../examples/arena/server/rules.js';
import { kindOf, type ArenaWorld } from '../../examples/arena/server/world.js';

/** A grunt with hp to spare whose nearest raider is farthest away (another than `not` if there is one), or -1. */
function quietGrunt(world: ArenaWorld, not: number): number {
  let best = -1;
  let bestD = -1;
  for (let i = 0; i < world.size; i++) {
    if (kindOf(i) !== KINDS.GRUNT || world.hp[i]! < 60 || i === not) continue;
    let d = Infinity;
    for (let r = 0; r < world.rx.length; r++) {
      if (world.ralive[r] === 1) d = Math.min(d, Math.hypot(world.rx[r]! - world.x[i]!, world.ry[r]! - world.y[i]!));
    }
    if (d > bestD) {
      best = i;
      bestD = d;
    }
  }
  return best;
}

describe('arena room', () => {
  let run: Running;
  beforeAll(async () => {
    run = await startBoth(200);
  }, 30_000);
  afterAll(async () => {
    await run?.close();
  });

  it('runs NPCs through chases and flees; every action ends exactly once; no errors', async () => {
    const room = run.arena.room;
    const world = room.world;
    // The ledger of actions, from the game's side: started by decisions, ended by our result or their cancel.
    const running = new Map<string, number>();
    const ended = new Map<string, 'result' | 'cancel'>();
    const twice: string[] = [];
    const unknownEnds: string[] = [];
    let staleCancels = 0;
    const staleBefore = world.counters.staleCancels;
    // The room has been running since start-up: the ledger opens with what runs now.
    for (const [id, seq] of world.running()) running.set(`${id}:${seq}`, room.tick);
    run.arena.room.link.client.on('decisions', (d: Decisions) => {
      // The link applied these already (it subscribed first): mirror them in the ledger. Starts
      // first, so that an action started and cancelled in the same frame ends by its cancel.
      for (const [id, seq, action] of d.actions) if (action !== 'aim' && action !== 'face') running.set(`${String(id)}:${seq}`, room.tick);
      for (const [id, seq] of d.cancels) {
        const key = `${String(id)}:${seq}`;
        if (running.has(key)) {
          running.delete(key);
          ended.set(key, 'cancel');
        } else if (ended.get(key) === 'result') staleCancels++; // the crossing documented in docs/integration.md §5
        else unknownEnds.push(`cancel ${key}`);
      }
    });
    const step = world.step.bind(world);
    world.step = (dt: number) => {
      step(dt);
      for (const [id, seq] of world.results() as readonly ActionResult[]) {
        const key = `${String(id)}:${seq}`;
        if (ended.has(key)) twice.push(key);
        else if (!running.delete(key)) unknownEnds.push(`result ${key}`);
        ended.set(key, 'result');
      }
    };
    const x0 = Float64Array.from(world.x);
    const y0 = Float64Array.from(world.y);
    const from = room.tick;
    // Whether combat alone brings a grunt (guard tree) below its flee threshold in time depends on how the raiders
    // happen to move (a CI run once had 600 ticks without it): wound two grunts as a raider would, so a flee is due.
    // (Regeneration, 3 hp/s, takes ~7 s to lift them back over 30.)
    for (const i of [0, 10]) world.hp[i] = 10;
    // A few seconds of game time (ticks, not wall time), and at least one chase and one flee.
    await until(() => room.tick - from >= 100 && world.counters.chases > 0 && world.counters.flees > 0, 30_000, () => `chases and flees: ${JSON.stringify(room.stats())}`);
    expect(room.tick - from).toBeGreaterThanOrEqual(100);

    let moved = 0;
    for (let i = 0; i < world.size; i++) if (Math.hypot(world.x[i]! - x0[i]!, world.y[i]! - y0[i]!) > 1) moved++;
    expect(moved).toBeGreaterThan(world.size / 4);
    expect(world.counters.chases).toBeGreaterThan(0);
    expect(world.counters.flees).toBeGreaterThan(0);
    expect(ended.size).toBeGreaterThan(50);
    expect(twice).toEqual([]);
    expect(unknownEnds).toEqual([]);
    // What the ledger says is running is exactly what the world has running.
    const inWorld = new Set(world.running().map(([id, seq]) => `${id}:${seq}`));
    expect([...inWorld].filter((key) => !running.has(key))).toEqual([]);
    expect([...running.keys()].filter((key) => !inWorld.has(key))).toEqual([]);
    expect(staleCancels).toBeLessThanOrEqual(world.counters.staleCancels - staleBefore);
    expect(run.arena.room.link.problems).toEqual([]);
    expect(run.arena.room.link.counters).toMatchObject({ agentErrors: 0, serviceErrors: 0 });
  }, 40_000);

  it('a player who joins gets the map and frames, walks, and is chased by Red Team', async () => {
    const room = run.arena.room;
    const world = room.world;
    // A real Colyseus client, as the browser page uses, from Node.
    const player = await new Client(run.arena.url).join('arena');
    try {
      const setup = new Promise<{ labels: string[]; session: string; you: string }>((resolve) => player.onMessage('setup', resolve));
      let frames = 0;
      let seenSelf = false;
      player.onMessage('frame', (f: { players: Array<[string, number, number]>; npcs: Uint8Array }) => {
        frames++;
        if (f.players.some(([id]) => id === player.sessionId) && f.npcs.byteLength === world.size * 12) seenSelf = true;
      });
      const s = await setup;
      expect(s.labels).toHaveLength(world.size);
      expect(s.labels[0]).toBe('Red Team/Grunts/0');
      expect(s.labels[7]).toBe('Blue Team/Squad 1/0');
      expect(s.session).toBe(room.link.session);
      expect(s.you).toBe(player.sessionId);
      // Walk east for a moment.
      const me = world.players.get(player.sessionId)!;
      const x0 = me.x;
      player.send('move', { vx: 1, vy: 0 });
      await until(() => me.x > x0 + 2, 10_000, 'the player to walk');
      player.send('move', { vx: 0, vy: 0 });
      // Grunts within sight of the player run at it (the guard's chase branch). Whether one wanders within sight of
      // the centre in time depends on the raiders (and, on a loaded machine, on how many ticks 20 s of wall time
      // make): so the player stands 10 units from a healthy grunt with no raider near it, as a player walking up to
      // one would, re-placed every step, another grunt picked every 40 steps.
      const chases = world.counters.playerChases;
      const step = world.step.bind(world);
      let target = -1;
      let steps = 0;
      world.step = (dt: number) => {
        if (world.counters.playerChases === chases) {
          if (steps++ % 40 === 0) target = quietGrunt(world, target);
          if (target >= 0) {
            me.x = Math.min(world.width - 1, Math.max(1, world.x[target]! + 10));
            me.y = world.y[target]!;
          }
        }
        step(dt);
      };
      try {
        await until(() => world.counters.playerChases > chases && frames > 0 && seenSelf, 20_000, () => `a chase of the player: ${JSON.stringify(world.counters)}, ${frames} frames`);
      } finally {
        world.step = step;
      }
    } finally {
      await player.leave();
    }
    await until(() => world.players.size === 0, 10_000, 'the player to leave');
  }, 40_000);
});
