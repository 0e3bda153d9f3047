// The example trees in trees/: they load, and in a scripted world each one decides what a designer expects.

import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '../src/bt/agent.js';
import { DecisionBuffer } from '../src/bt/decisions.js';
import { TreeLibrary, formatErrors } from '../src/bt/library.js';

const TREES = fileURLToPath(new URL('../trees/', import.meta.url));

let library: TreeLibrary;

beforeAll(async () => {
  const result = await TreeLibrary.loadFolder(TREES);
  if (!result.ok) throw new Error(formatErrors(result.errors));
  library = result.library;
});

/** What one tick decided, in protocol shape, without the agent id. */
interface Tick {
  actions: Array<[number, string, Readonly<Record<string, unknown>>]>;
  cancels: number[];
  done: Array<'success' | 'failure'>;
  logs: string[];
}

/** One agent on one example tree, ticked in a world the test scripts. */
class Scripted {
  readonly agent: Agent;
  private readonly out = new DecisionBuffer(true);

  constructor(tree: string, self: unknown, world: unknown = null) {
    this.agent = new Agent(library.get(tree)!, 'npc');
    this.agent.self = self;
    this.agent.world = world;
  }

  /** Ticks at tree time `time`, after applying changes to the observation and world. */
  tick(time: number, change: { self?: Record<string, unknown>; world?: Record<string, unknown> } = {}): Tick {
    if (change.self !== undefined) this.agent.self = { ...(this.agent.self as object), ...change.self };
    if (change.world !== undefined) this.agent.world = { ...(this.agent.world as object), ...change.world };
    this.out.clear();
    this.agent.tick(time, 0.1, this.out);
    if (this.out.errors.length > 0) throw new Error(`the agent stopped: ${JSON.stringify(this.out.errors)}`);
    return {
      actions: this.out.actions.map(([, seq, action, args]) => [seq, action, args]),
      cancels: this.out.cancels.map(([, seq]) => seq),
      done: this.out.done.map(([, status]) => status),
      logs: this.out.logs.map(([, , message]) => message),
    };
  }

  /** The game server reports action `seq` finished. */
  result(seq: number, success = true): void {
    if (!this.agent.deliverResult(seq, success)) throw new Error(`no running action has seq ${seq}`);
  }

  /** Names (or types) of the running nodes, root first. */
  active(): string[] {
    const tree = this.agent.tree;
    return this.agent.inspect().activePath.map((i) => tree.nodes[i]!.name ?? tree.nodes[i]!.type);
  }
}

const quiet: Tick = { actions: [], cancels: [], done: [], logs: [] };

it('every example tree loads, and the subtree is part of squad', () => {
  expect(library.names()).toEqual(['follower', 'guard', 'squad', 'take-cover']);
  expect(library.get('squad')!.nodes.some((n) => n.file === 'take-cover')).toBe(true);
});

describe('guard (2D-shooter enemy)', () => {
  const calm = { hp: 100, enemyVisible: false, enemyDist: 99, enemyPos: null };
  const far = { enemyVisible: true, enemyDist: 10, enemyPos: { x: 10, y: 0 } };
  const near = { enemyVisible: true, enemyDist: 3, enemyPos: { x: 3, y: 0 } };

  it('patrols its waypoints in turn, pausing 1 s at each', () => {
    const g = new Scripted('guard', calm);
    expect(g.tick(0)).toEqual({ ...quiet, actions: [[1, 'moveTo', { waypoint: 0, speed: 'walk' }]] });
    expect(g.tick(0.1)).toEqual(quiet);
    g.result(1);
    expect(g.tick(0.2)).toEqual(quiet);
    expect(g.active()).toEqual(['guard', 'patrol', 'wait']);
    expect(g.tick(1.1)).toEqual(quiet);
    expect(g.tick(1.2)).toEqual({ ...quiet, done: ['success'] });
    expect(g.agent.bb['waypoint']).toBe(1);
    expect(g.tick(1.3)).toEqual({ ...quiet, actions: [[2, 'moveTo', { waypoint: 1, speed: 'walk' }]] });
  });

  it('chases an enemy it sees far away, interrupting the patrol', () => {
    const g = new Scripted('guard', calm);
    g.tick(0);
    expect(g.tick(0.1, { self: far })).toEqual({ ...quiet, cancels: [1], actions: [[2, 'moveTo', { to: { x: 10, y: 0 }, speed: 'run' }]] });
    expect(g.active()).toEqual(['guard', 'chase']);
  });

  it('aims and shoots once the enemy is in range, interrupting the chase', () => {
    const g = new Scripted('guard', { ...calm, ...far });
    expect(g.tick(0).actions).toEqual([[1, 'moveTo', { to: { x: 10, y: 0 }, speed: 'run' }]]);
    expect(g.tick(0.1, { self: near })).toEqual({
      ...quiet,
      cancels: [1],
      actions: [
        [2, 'aim', { at: { x: 3, y: 0 } }],
        [3, 'shoot', { at: { x: 3, y: 0 } }],
      ],
    });
    g.result(3);
    expect(g.tick(0.2)).toEqual({ ...quiet, done: ['success'] });
  });

  it('flees when hurt, interrupting the attack', () => {
    const g = new Scripted('guard', { ...calm, ...near });
    g.tick(0);
    expect(g.active()).toEqual(['guard', 'attack', 'action']);
    expect(g.tick(0.1, { self: { hp: 20 } })).toEqual({ ...quiet, cancels: [2], actions: [[3, 'flee', { from: { x: 3, y: 0 } }]] });
    g.result(3);
    expect(g.tick(0.2)).toEqual({ ...quiet, done: ['success'] });
  });

  it('stops chasing when it loses sight of the enemy, and goes back to its patrol', () => {
    const g = new Scripted('guard', { ...calm, ...far });
    g.tick(0);
    expect(g.tick(0.1, { self: calm })).toEqual({ ...quiet, cancels: [1], actions: [[2, 'moveTo', { waypoint: 0, speed: 'walk' }]] });
  });

  it('gives up a shot the game never answers after 1 s, and keeps chasing rather than flip-flopping', () => {
    const g = new Scripted('guard', { ...calm, ...near });
    g.tick(0);
    expect(g.tick(0.9)).toEqual(quiet);
    expect(g.tick(1.0)).toEqual({ ...quiet, cancels: [2], actions: [[3, 'moveTo', { to: { x: 3, y: 0 }, speed: 'run' }]] });
    // The attack guard stayed true: it does not abort the chase again (only a false → true change does).
    expect(g.tick(1.1)).toEqual(quiet);
    expect(g.active()).toEqual(['guard', 'chase']);
  });
});

/** A follower's observation: its position on the x axis. */
function at(x: number): Record<string, unknown> {
  return { pos: { x, y: 0 } };
}

describe('follower', () => {
  const player = { player: { x: 10, y: 0 } };

  it('walks toward the player, stops near them, then waits facing them', () => {
    const f = new Scripted('follower', at(0), player);
    expect(f.tick(0)).toEqual({ ...quiet, actions: [[1, 'moveTo', { to: { x: 10, y: 0 }, speed: 'walk' }]] });
    expect(f.tick(0.1, { self: at(5) })).toEqual(quiet);
    // Near enough: `until` ends the walk with success and tells the game to stop it.
    expect(f.tick(0.2, { self: at(8) })).toEqual({ ...quiet, cancels: [1], done: ['success'] });
    expect(f.tick(0.3)).toEqual({ ...quiet, actions: [[2, 'face', { at: { x: 10, y: 0 } }]] });
    expect(f.active()).toEqual(['follower', 'wait near the player', 'wait']);
    expect(f.tick(0.5)).toEqual(quiet);
    expect(f.tick(0.8)).toEqual({ ...quiet, done: ['success'] });
  });

  it('follows again when the player moves away while it waits', () => {
    const f = new Scripted('follower', at(9), player);
    expect(f.tick(0).actions).toEqual([[1, 'face', { at: { x: 10, y: 0 } }]]);
    expect(f.tick(0.1, { world: { player: { x: 30, y: 0 } } })).toEqual(quiet);
    expect(f.tick(0.5)).toEqual({ ...quiet, done: ['success'] });
    expect(f.tick(0.6)).toEqual({ ...quiet, actions: [[2, 'moveTo', { to: { x: 30, y: 0 }, speed: 'walk' }]] });
  });

  it('gives up after 5 s if it cannot reach the player', () => {
    const f = new Scripted('follower', at(0), player);
    f.tick(0);
    expect(f.tick(4.9)).toEqual(quiet);
    expect(f.tick(5)).toEqual({ ...quiet, cancels: [1], done: ['failure'] });
  });

  it('fails without doing anything when there is no player', () => {
    const f = new Scripted('follower', at(0), { player: null });
    expect(f.tick(0)).toEqual({ ...quiet, done: ['failure'] });
  });
});

describe('squad (services, aborts, parallel, subtree, cooldown, timeLimit)', () => {
  const me = { pos: { x: 0, y: 0 }, lastHit: null, formationSlot: { x: 1, y: 0 } };
  const world = { enemies: [] as unknown[], cover: [{ x: -5, y: 0 }] };
  const enemy = { x: 20, y: 0 };

  it('holds formation when no enemy is near', () => {
    const s = new Scripted('squad', me, world);
    expect(s.tick(0)).toEqual({ ...quiet, actions: [[1, 'moveTo', { to: { x: 1, y: 0 }, speed: 'walk' }]] });
    expect(s.tick(0.1, { self: { pos: { x: 0.8, y: 0 } } })).toEqual({ ...quiet, cancels: [1], logs: ['in formation'] });
    expect(s.active()).toEqual(['squad member', 'hold formation', 'wait']);
    // A wait of 1 to 2 s, drawn with the agent's seeded generator.
    let t = 0.1;
    while (s.tick((t += 0.1)).done.length === 0) expect(t).toBeLessThan(2.2);
    expect(t).toBeGreaterThan(1.1);
  });

  it("notices an enemy at the service's next run, then fires and advances at once, leaving formation", () => {
    const s = new Scripted('squad', me, world);
    s.tick(0);
    // The service last ran at 0: the enemy is not seen before 0.5 s.
    expect(s.tick(0.1, { world: { enemies: [enemy, { x: 50, y: 0 }] } })).toEqual(quiet);
    expect(s.tick(0.5)).toEqual({
      ...quiet,
      cancels: [1],
      actions: [
        [2, 'fire', { at: enemy, rounds: 3 }],
        [3, 'moveTo', { to: enemy, speed: 'run' }],
      ],
    });
    expect(s.agent.bb['target']).toEqual(enemy);
    expect(s.active()).toContain('suppress and advance');
  });

  it('fires bursts 2 s apart (cooldown) while advancing, and stops firing when it arrives', () => {
    const s = new Scripted('squad', me, { ...world, enemies: [enemy] });
    expect(s.tick(0).actions.map(([seq, action]) => [seq, action])).toEqual([
      [1, 'fire'],
      [2, 'moveTo'],
    ]);
    s.result(1);
    expect(s.tick(0.1)).toEqual(quiet);
    expect(s.tick(2.0)).toEqual(quiet);
    expect(s.tick(2.1)).toEqual({ ...quiet, actions: [[3, 'fire', { at: enemy, rounds: 3 }]] });
    // Within 8 m of the target: `until` ends the advance (success, and a cancel of the move), so the
    // parallel succeeds and halts the burst still in flight (cancelled too).
    expect(s.tick(2.2, { self: { pos: { x: 13, y: 0 } } })).toEqual({ ...quiet, cancels: [2, 3], done: ['success'] });
  });

  it('advances for at most 4 s, then stops firing and returns to formation in the same tick', () => {
    const s = new Scripted('squad', me, { ...world, enemies: [enemy] });
    s.tick(0);
    s.result(1);
    s.tick(0.1);
    expect(s.tick(2.1).actions).toEqual([[3, 'fire', { at: enemy, rounds: 3 }]]);
    s.result(3);
    expect(s.tick(2.2)).toEqual(quiet);
    expect(s.tick(3.9)).toEqual(quiet);
    expect(s.tick(4.0)).toEqual({ ...quiet, cancels: [2], actions: [[4, 'moveTo', { to: { x: 1, y: 0 }, speed: 'walk' }]] });
    expect(s.active()).toEqual(['squad member', 'hold formation', 'action']);
  });

  it('takes cover (subtree) when hit, interrupting the fight, and crouches facing the threat until safe', () => {
    const s = new Scripted('squad', me, { ...world, enemies: [enemy] });
    s.tick(0);
    s.tick(0.1, { self: { lastHit: 0.1 } });
    expect(s.tick(0.5)).toEqual({ ...quiet, cancels: [1, 2], actions: [[3, 'moveTo', { to: { x: -5, y: 0 }, speed: 'sprint' }]] });
    expect(s.active().slice(0, 3)).toEqual(['squad member', 'take cover', 'take cover']);
    expect(s.agent.bb['threat']).toEqual(enemy);
    expect(s.agent.bb['coverSpot']).toEqual({ x: -5, y: 0 });
    s.result(3);
    expect(s.tick(0.6)).toEqual({ ...quiet, actions: [[4, 'crouch', { facing: enemy }]] });
    expect(s.tick(3.0)).toEqual(quiet);
    // Not hit for more than 3 s: crouching ends (and the game is told to stop it); the tree is done.
    expect(s.tick(3.2)).toEqual({ ...quiet, cancels: [4], done: ['success'] });
  });

  it('gives up running to cover after 4 s and fights on', () => {
    const s = new Scripted('squad', { ...me, lastHit: 0 }, { ...world, enemies: [enemy] });
    expect(s.tick(0).actions).toEqual([[1, 'moveTo', { to: { x: -5, y: 0 }, speed: 'sprint' }]]);
    expect(s.tick(4)).toEqual({
      ...quiet,
      cancels: [1],
      actions: [
        [2, 'fire', { at: enemy, rounds: 3 }],
        [3, 'moveTo', { to: enemy, speed: 'run' }],
      ],
    });
  });

  it('fights on when there is no cover within 20 m', () => {
    const s = new Scripted('squad', { ...me, lastHit: 0 }, { enemies: [enemy], cover: [{ x: 100, y: 100 }] });
    expect(s.tick(0).actions.map(([, action]) => action)).toEqual(['fire', 'moveTo']);
  });
});
