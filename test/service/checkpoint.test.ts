// Packed checkpoints (crash recovery): unpacking gives back every agent exactly as exportState() describes it,
// and the restored agents decide exactly as the originals from then on.

import { deserialize } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { Agent, DecisionBuffer, NodeCatalog, compileTree, type CompiledTree } from '../../src/bt/index.js';
import { AgentPacking, MIN_REUSED_CHECKPOINT_BYTES, giveCheckpointMemory, packAgents, unpackAgents } from '../../src/service/pool/checkpoint.js';
import { LodTable } from '../../src/service/pool/lod.js';

const tree = compileTree(
  'mixed',
  () => ({
    blackboard: { mood: 1, target: null },
    root: {
      type: 'random',
      children: [
        { type: 'action', action: 'shout', args: { x: 'self.x', mood: 'bb.mood', r: 'rand()' }, instant: true },
        { type: 'action', action: 'walk', args: { x: 'self.x' } },
        { type: 'sequence', children: [{ type: 'wait', seconds: [0.1, 0.4] }, { type: 'action', action: 'ring', args: { r: 'rand()' }, instant: true }] },
      ],
    },
  }),
  new NodeCatalog(),
);
const trees = { get: (name: string): CompiledTree | undefined => (name === 'mixed' ? tree : undefined) };
const FIELDS = ['x', 'tag'];

function population(): Array<Agent | null> {
  const agents: Array<Agent | null> = [];
  for (let i = 0; i < 12; i++) {
    if (i === 4) {
      agents.push(null); // a freed slot
      continue;
    }
    const a = new Agent(tree, i % 3 === 0 ? `orc-${i}` : i, { seed: i * 13, label: i % 2 === 0 ? `L${i}` : '' });
    // Every kind of value: row observations, a map observation, none; numbers, strings, NaN, -0, nested bb values.
    a.self = i === 5 ? { nested: { deep: [1, 2] } } : i === 7 ? null : { x: i === 9 ? Number.NaN : i * 1.5, tag: i % 2 === 0 ? 'even' : -0 };
    if (i === 2) a.setBlackboard({ mood: 'angry', target: { id: 3, at: [1, 2] } });
    agents.push(a);
  }
  return agents;
}

describe('packed checkpoints', () => {
  it('round-trip every agent exactly (exportState) and the world, in their slots', () => {
    const agents = population();
    const out = new DecisionBuffer();
    for (let t = 1; t <= 7; t++) for (const a of agents) a?.tick(t * 0.05, 0.05, out);
    agents[10]!.stop(out, 'E_PLUGIN', 'test');
    const world = { weather: 'rain', at: [3, 4] };
    const back = unpackAgents(packAgents(agents, FIELDS, world), FIELDS, trees);
    expect(back.world).toEqual(world);
    expect(back.agents.map(([slot]) => slot)).toEqual([0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11]);
    for (const [slot, agent] of back.agents) expect(agent.exportState()).toEqual(agents[slot]!.exportState());
  });

  it('restored agents decide exactly like the originals', () => {
    const agents = population();
    const warm = new DecisionBuffer();
    for (let t = 1; t <= 5; t++) for (const a of agents) a?.tick(t * 0.05, 0.05, warm);
    const back = unpackAgents(packAgents(agents, FIELDS, null), FIELDS, trees);
    const a = new DecisionBuffer();
    const b = new DecisionBuffer();
    for (let t = 6; t <= 30; t++) {
      for (const x of agents) x?.tick(t * 0.05, 0.05, a);
      for (const [, x] of back.agents) x.tick(t * 0.05, 0.05, b);
    }
    expect(JSON.stringify(b)).toEqual(JSON.stringify(a));
    expect(JSON.stringify(a).length).toBeGreaterThan(100);
  });

  it('packs many agents of two trees, interleaved, each number by its kind (zero, int32, other), columns grown past their first size', () => {
    const other = compileTree(
      'other',
      () => ({ blackboard: { a: 0, b: -0, c: 2 ** 31, d: -(2 ** 31), e: 0.5, f: 'text', g: true, h: null, i: [1, 2], j: 7 }, root: { type: 'action', action: 'idle' } }),
      new NodeCatalog(),
    );
    const both = { get: (name: string): CompiledTree | undefined => (name === 'mixed' ? tree : name === 'other' ? other : undefined) };
    const agents: Array<Agent | null> = [];
    for (let i = 0; i < 700; i++) {
      const a = new Agent(i % 3 === 1 ? other : tree, i, { seed: i, label: i % 50 === 0 ? `L${i}` : '' });
      a.self = i % 4 === 0 ? null : { x: i % 5 === 0 ? -0 : i % 7 === 0 ? i : i / 8, tag: i % 2 === 0 ? [i, i + 1] : true };
      agents.push(i % 97 === 3 ? null : a);
    }
    const out = new DecisionBuffer();
    for (let t = 1; t <= 4; t++) for (const a of agents) a?.tick(t * 0.05, 0.05, out);
    const bytes = packAgents(agents, FIELDS, null);
    const back = unpackAgents(bytes, FIELDS, both);
    expect(back.agents.length).toBe(agents.filter((a) => a !== null).length);
    for (const [slot, agent] of back.agents) expect(agent.exportState()).toEqual(agents[slot]!.exportState());
    // The v2 form of each number column, against the definition: kind 0 a zero (not -0), 1 an int32, 2 anything
    // else, with the int32s and the others in order in their own arrays.
    type Numbers = { kinds: Uint8Array; ints: Int32Array; floats: Float64Array };
    const packed = deserialize(bytes) as Record<string, unknown> & { bb: { nums: Numbers; tags: Uint8Array }; scalars: Numbers };
    const check = (p: Numbers): void => {
      let ints = 0;
      let floats = 0;
      const misfiled: number[] = [];
      for (let i = 0; i < p.kinds.length; i++) {
        if (p.kinds[i] === 1 && !Number.isInteger(p.ints[ints++])) misfiled.push(i);
        if (p.kinds[i] === 2) {
          const v = p.floats[floats++]!;
          if (!Object.is(v, -0) && (v | 0) === v) misfiled.push(i);
        }
      }
      expect(misfiled).toEqual([]);
      expect([ints, floats]).toEqual([p.ints.length, p.floats.length]);
    };
    for (const key of ['numbers', 'scalars', 'ids', 'bb', 'selfValues']) {
      const column = packed[key] as Numbers | { nums: Numbers };
      check('nums' in column ? column.nums : column);
    }
    expect(packed.bb.tags.length).toBeGreaterThan(2 * back.agents.length); // grew past count * 2
  });

  it("keeps observations' arrays of numbers as numbers (v3) and gives each back as a plain array of its own, any other array as it was", () => {
    // oxlint-disable-next-line unicorn/no-new-array -- a hole on purpose: not an array of numbers
    const holed = new Array<number>(3);
    holed[0] = 1;
    const tags: unknown[] = [[], [Number.NaN, -0, 2 ** 40, 0.1], Array.from({ length: 15 }, (_, j) => j / 3), Array.from({ length: 16 }, (_, j) => j), [1, 'a'], holed, [[1, 2]], [Infinity, -Infinity]];
    const agents = tags.map((tag, i) => {
      const a = new Agent(tree, i, { seed: i });
      a.self = { x: i, tag };
      return a;
    });
    const bytes = packAgents(agents, FIELDS, null);
    // Mutated after the pack: the checkpoint holds the values of its moment.
    (tags[1] as number[])[0] = 99;
    const back = unpackAgents(bytes, FIELDS, trees);
    const restored = back.agents.map(([, a]) => (a.self as { tag: unknown }).tag);
    expect(restored[0]).toEqual([]);
    expect(restored[1]).toEqual([Number.NaN, -0, 2 ** 40, 0.1]);
    expect(Object.is((restored[1] as number[])[1], -0)).toBe(true);
    expect(restored.slice(2)).toEqual(tags.slice(2));
    expect(1 in (restored[5] as number[])).toBe(false); // the hole is still a hole (serialized as it was)
    for (const r of restored) expect(Object.getPrototypeOf(r)).toBe(Array.prototype);
    // Numbers in `vectors` for the arrays of at most 15 numbers; the others (16 numbers, a string, a hole, an array) as values.
    const packed = deserialize(bytes) as { v: number; selfValues: { tags: Uint8Array; other: unknown[]; vectors: Float64Array } };
    expect(packed.v).toBe(3);
    expect(Array.from(packed.selfValues.tags.filter((_, i) => i % 2 === 1))).toEqual([6, 6, 6, 4, 4, 4, 4, 6]);
    expect(packed.selfValues.vectors.length).toBe(1 + 5 + 16 + 3);
    // Without such arrays a checkpoint is v2, as before v3 (what older versions read: durable sessions cross instances).
    const plain = deserialize(packAgents(population(), FIELDS, null)) as { v: number; selfValues: Record<string, unknown> };
    expect(plain.v).toBe(2);
    expect('vectors' in plain.selfValues).toBe(false);
  });

  it('packed in parts (a worker between its other messages), the bytes are those of one pack', () => {
    const agents: Array<Agent | null> = [];
    for (let i = 0; i < 500; i++) {
      const a = new Agent(tree, i % 5 === 0 ? `orc-${i}` : i, { seed: i, label: i % 7 === 0 ? `L${i}` : '' });
      a.self = i % 6 === 0 ? null : { x: i / 4, tag: i % 2 === 0 ? 'even' : [i] };
      agents.push(i % 50 === 9 ? null : a);
    }
    const out = new DecisionBuffer();
    for (let t = 1; t <= 6; t++) for (const a of agents) a?.tick(t * 0.05, 0.05, out);
    const world = { at: [1, 2] };
    const packing = new AgentPacking(agents, FIELDS);
    let parts = 1;
    // A deadline already passed: one step of agents per call.
    while (!packing.step(0)) parts++;
    expect(parts).toBeGreaterThan(5);
    expect(packing.count).toBe(agents.filter((a) => a !== null).length);
    expect(Buffer.from(packing.finish(world, null, 0.3)).equals(Buffer.from(packAgents(agents, FIELDS, world, null, 0.3)))).toBe(true);
  });

  it('a pack that reuses the last packer (the thread keeps one) holds nothing of the larger pack before it', () => {
    // The larger pack: ticked agents (timers, cursors, seqs: floats and int32s in the numeric slots), labels,
    // blackboard objects, observations of every kind.
    const big = population();
    const out = new DecisionBuffer();
    for (let t = 1; t <= 9; t++) for (const a of big) a?.tick(t * 0.37, 0.37, out);
    packAgents(big, FIELDS, { big: true });
    // The smaller: never ticked (every numeric slot a zero), no labels, fewer fields in its observations.
    const small: Agent[] = [];
    for (let i = 0; i < 5; i++) {
      const a = new Agent(tree, 100 + i, { seed: 1 });
      a.self = { x: 0, tag: null };
      small.push(a);
    }
    const reused = new AgentPacking(small, FIELDS); // takes the kept packer
    const fresh = new AgentPacking(small, FIELDS); // a new one: the kept packer is taken
    reused.step(Infinity);
    fresh.step(Infinity);
    const bytes = reused.finish(null, null, Number.NaN);
    expect(Buffer.from(bytes).equals(Buffer.from(fresh.finish(null, null, Number.NaN)))).toBe(true);
    const back = unpackAgents(bytes, FIELDS, trees);
    expect(back.agents.map(([slot]) => slot)).toEqual([0, 1, 2, 3, 4]);
    for (const [slot, agent] of back.agents) expect(agent.exportState()).toEqual(small[slot]!.exportState());
  });

  it('refuses a checkpoint whose tree was reloaded since (another version under the same name), rather than misread it', () => {
    const agents = population();
    const bytes = packAgents(agents, FIELDS, null);
    const reloaded = compileTree('mixed', () => ({ blackboard: { mood: 1, target: null }, root: { type: 'action', action: 'shout', instant: true } }), new NodeCatalog());
    expect(reloaded.hash).not.toBe(tree.hash);
    expect(() => unpackAgents(bytes, FIELDS, { get: (name) => (name === 'mixed' ? reloaded : undefined) })).toThrow(
      `tree 'mixed' is version ${reloaded.hash} here, the checkpoint has ${tree.hash}`,
    );
  });

  describe('the local form (crash recovery in this process)', () => {
    /** `n` ticked agents with values of every kind, arrays of numbers in observations among them (v3's case). */
    function many(n: number, offset: number): Array<Agent | null> {
      const agents: Array<Agent | null> = [];
      for (let i = 0; i < n; i++) {
        const a = new Agent(tree, i % 9 === 0 ? `orc-${i + offset}` : i + offset, { seed: i + offset, label: i % 40 === 0 ? `L${i}` : '' });
        a.self = i % 11 === 0 ? null : i % 13 === 0 ? { other: true } : { x: (i + offset) / 3, tag: i % 2 === 0 ? [i, i + 0.5, -0] : i % 3 === 0 ? 'three' : true };
        if (i % 17 === 0) a.setBlackboard({ mood: `m${i}`, target: { at: [i, offset] } });
        agents.push(i % 29 === 5 ? null : a);
      }
      const out = new DecisionBuffer();
      for (let t = 1; t <= 5; t++) for (const a of agents) a?.tick(t * 0.05 + offset, 0.05, out);
      return agents;
    }

    function lodOf(agents: ReadonlyArray<Agent | null>): LodTable {
      const lod = new LodTable();
      agents.forEach((a, slot) => {
        if (a !== null) lod.moved(slot, 1 + (slot % 4), slot % 3, slot % 5 === 0 ? Number.NaN : slot * 0.05);
      });
      return lod;
    }

    it('gives back every agent, the world, level of detail and tree time exactly as the portable form does', () => {
      const agents = many(300, 0);
      const world = { weather: 'rain', at: [3, 4] };
      const lod = lodOf(agents);
      const local = packAgents(agents, FIELDS, world, lod, 1.25, 'local');
      expect(Array.from(local.subarray(0, 4))).toEqual([...Buffer.from('CHK4')]);
      const a = unpackAgents(local, FIELDS, trees);
      const b = unpackAgents(packAgents(agents, FIELDS, world, lod, 1.25), FIELDS, trees);
      expect(a.world).toEqual(world);
      expect(a.previous).toBe(1.25);
      expect(a.agents.map(([slot]) => slot)).toEqual(b.agents.map(([slot]) => slot));
      for (const [slot, agent] of a.agents) {
        expect(agent.exportState()).toEqual(agents[slot]!.exportState());
        expect(a.lod!.stateOf(slot)).toEqual(lod.stateOf(slot));
      }
      // Without level of detail or a previous tick, as the portable form: none.
      const plain = unpackAgents(packAgents(agents, FIELDS, null, null, Number.NaN, 'local'), FIELDS, trees);
      expect([plain.lod, plain.previous, plain.world]).toEqual([null, Number.NaN, null]);
    });

    it('reads local bytes that do not start on a multiple of 8 (a copy elsewhere)', () => {
      const agents = many(40, 3);
      const local = packAgents(agents, FIELDS, { w: 1 }, null, Number.NaN, 'local');
      const shifted = new Uint8Array(local.length + 3).subarray(3);
      shifted.set(local);
      const back = unpackAgents(shifted, FIELDS, trees);
      for (const [slot, agent] of back.agents) expect(agent.exportState()).toEqual(agents[slot]!.exportState());
    });

    it('packs into memory given back (a replaced checkpoint), and its bytes are those of a pack into new memory', () => {
      const first = many(1500, 0);
      const old = packAgents(first, FIELDS, { big: true }, null, Number.NaN, 'local');
      expect(old.length).toBeGreaterThanOrEqual(MIN_REUSED_CHECKPOINT_BYTES);
      const memory = old.buffer as ArrayBuffer;
      // Other agents, of about the same size: the pack goes into that buffer, over what it held.
      const second = many(1450, 7);
      giveCheckpointMemory([memory]);
      const packing = new AgentPacking(second, FIELDS);
      packing.step(Infinity);
      const bytes = packing.finish(null, null, Number.NaN, 'local');
      expect(packing.reused).toBe(true);
      expect(bytes.buffer).toBe(memory);
      // The memory is taken: the same pack again goes into new memory, with the same bytes.
      const fresh = new AgentPacking(second, FIELDS);
      fresh.step(Infinity);
      const again = fresh.finish(null, null, Number.NaN, 'local');
      expect(fresh.reused).toBe(false);
      expect(again.buffer).not.toBe(memory);
      expect(Buffer.from(bytes).equals(Buffer.from(again))).toBe(true);
      const back = unpackAgents(bytes, FIELDS, trees);
      expect(back.agents.length).toBe(second.filter((a) => a !== null).length);
      for (const [slot, agent] of back.agents) expect(agent.exportState()).toEqual(second[slot]!.exportState());
    });

    it('keeps small packs out of the given-back memory, and the portable form never uses it', () => {
      const memory = packAgents(many(1500, 0), FIELDS, null, null, Number.NaN, 'local').buffer as ArrayBuffer;
      giveCheckpointMemory([memory]);
      const small = packAgents(many(20, 1), FIELDS, null, null, Number.NaN, 'local');
      expect(small.buffer).not.toBe(memory);
      expect(small.length).toBe(small.buffer.byteLength); // new memory of its own size
      const portable = packAgents(many(1450, 2), FIELDS, null);
      expect(portable.buffer).not.toBe(memory);
      expect(portable[0]).toBe(0xff); // v8's serialization
      // Still there for the next large local pack.
      const packing = new AgentPacking(many(1450, 2), FIELDS);
      packing.step(Infinity);
      expect(packing.finish(null, null, Number.NaN, 'local').buffer).toBe(memory);
      expect(packing.reused).toBe(true);
    });
  });
});
