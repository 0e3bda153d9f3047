// The inspector's engine part: node facts for drawing the graph, watched agents' frames, the why.

import { describe, expect, it } from 'vitest';
import { Agent, compileTree, DecisionBuffer, NodeCatalog, type CompiledTree, type TreeDefinition } from '../../src/bt/index.js';

const guarded: TreeDefinition = {
  blackboard: { target: null },
  root: {
    type: 'selector',
    children: [
      { type: 'sequence', name: 'flee', if: 'self.hp < 30', abort: 'both', services: [{ every: 0.5, values: { target: 'self.enemy' } }], children: [{ type: 'action', action: 'flee', args: { speed: 2 } }] },
      { type: 'repeat', times: 3, child: { type: 'condition', expr: 'self.hp >= 30' } },
    ],
  },
};

describe('NodeInfo for the inspector', () => {
  it('carries each node’s guard, own parameters and services as written', () => {
    const tree = compileTree('t', (n) => (n === 't' ? guarded : undefined), new NodeCatalog());
    const [root, flee, act, rep, cond] = tree.nodes;
    expect(root!.guard).toBeUndefined();
    expect(root!.params).toBeUndefined();
    expect(flee!.guard).toEqual({ if: 'self.hp < 30', abort: 'both' });
    expect(flee!.services).toEqual([{ every: 0.5, values: { target: 'self.enemy' } }]);
    expect(flee!.params).toBeUndefined();
    expect(act!.params).toEqual({ action: 'flee', args: { speed: 2 } });
    expect(rep!.params).toEqual({ times: 3 });
    expect(cond!.params).toEqual({ expr: 'self.hp >= 30' });
    expect(Object.isFrozen(act!.params)).toBe(true);
  });
});

function compile(def: TreeDefinition): CompiledTree {
  return compileTree('t', (n) => (n === 't' ? def : undefined), new NodeCatalog());
}

const fleeOrPatrol: TreeDefinition = {
  blackboard: { seen: 0 },
  root: {
    type: 'selector',
    children: [
      { type: 'action', action: 'flee', if: 'self.hp < 30 && bb.seen >= 0', abort: 'lower' },
      { type: 'sequence', children: [{ type: 'set', values: { seen: 'bb.seen + 1' } }, { type: 'action', action: 'patrol' }] },
    ],
  },
};

describe('watched agents', () => {
  it('record per tick the nodes visited, guard values, aborts, halts and decisions in order', () => {
    const tree = compile(fleeOrPatrol);
    const a = new Agent(tree, 'npc');
    const out = new DecisionBuffer();
    const trace = a.watch(100);
    trace.nextTick = 7;
    a.self = { hp: 50 };
    a.tick(0.05, 0.05, out);
    const f1 = trace.latest()!;
    expect(f1.tick).toBe(7);
    expect(f1.nodes.map((n) => n.status)).toEqual(['running', 'failure', 'running', 'success', 'running']);
    expect(f1.nodes.map((n) => n.ticked)).toEqual([true, true, true, true, true]);
    expect(f1.nodes[1]!.guard).toBe(false);
    expect(f1.events).toEqual([{ kind: 'action', node: 4, seq: 1, action: 'patrol', args: {} }]);
    expect(f1.waiting).toEqual([{ seq: 1, node: 4, action: 'patrol', since: 7 }]);
    expect(f1.changed).toEqual(['seen']);
    expect(f1.bb).toEqual({ seen: 1 });
    expect(f1.self).toEqual({ hp: 50 });

    a.self = { hp: 20 };
    out.clear();
    a.tick(0.1, 0.05, out);
    const f2 = trace.latest()!;
    expect(f2.tick).toBe(8);
    expect(f2.events).toEqual([
      { kind: 'abort', node: 1, mode: 'lower' },
      { kind: 'cancel', node: 4, seq: 1 },
      { kind: 'action', node: 1, seq: 2, action: 'flee', args: {} },
    ]);
    expect(out.cancels).toEqual([['npc', 1]]);
    expect(out.actions).toEqual([['npc', 2, 'flee', {}]]);
    expect(f2.nodes[1]).toMatchObject({ status: 'running', ticked: true, aborted: true, guard: true });
    expect(f2.nodes[2]).toMatchObject({ status: 'idle', ticked: false, halted: true });
    expect(f2.nodes[4]).toMatchObject({ status: 'idle', halted: true });
    expect(f2.nodes[3]).toEqual({ status: 'success', ticked: false });
    expect(f2.changed).toEqual([]);
    expect(f2.waiting).toEqual([{ seq: 2, node: 1, action: 'flee', since: 8 }]);

    expect(a.deliverResult(2, true)).toBe(true);
    out.clear();
    a.tick(0.15, 0.05, out);
    const f3 = trace.latest()!;
    expect(f3.events).toEqual([{ kind: 'result', seq: 2, status: 'success' }, { kind: 'done', status: 'success' }]);
    expect(f3.nodes[0]!.status).toBe('success');
    expect(trace.frames().map((f) => f.tick)).toEqual([7, 8, 9]);
    expect(trace.frames(8).map((f) => f.tick)).toEqual([8, 9]);
  });

  it('explains a tick: every guard and condition on the path with each sub-expression’s value', () => {
    const a = new Agent(compile(fleeOrPatrol), 1);
    const trace = a.watch(10);
    const out = new DecisionBuffer();
    a.self = { hp: 50 };
    a.tick(0.05, 0.05, out);
    a.self = { hp: 20 };
    a.tick(0.1, 0.05, out);
    const why1 = trace.why(a, 0)!;
    expect(why1.checks).toHaveLength(1);
    const c = why1.checks[0]!;
    expect(c).toMatchObject({ node: 1, path: 'root.children[0]', kind: 'guard', source: 'self.hp < 30 && bb.seen >= 0', value: false });
    expect(c.term.value).toBe(false);
    const [left, right] = c.term.children;
    expect(left).toMatchObject({ text: 'self.hp < 30', value: false });
    expect(left!.children.map((t) => [t.text, t.value])).toEqual([['self.hp', 50], ['30', 30]]);
    expect(right).toMatchObject({ text: 'bb.seen >= 0', value: null, skipped: true });
    // Tick 1: the selector checks the guard for abort "lower" (hp 20, seen = 1), then flee starts and checks it again.
    const why2 = trace.why(a, 1)!;
    expect(why2.checks.map((k) => [k.node, k.kind, k.value])).toEqual([[1, 'guard', true], [1, 'guard', true]]);
    const t2 = why2.checks[0]!.term;
    expect(t2.children.map((t) => [t.text, t.value])).toEqual([['self.hp < 30', true], ['bb.seen >= 0', true]]);
    expect(t2.children[1]!.children[0]).toMatchObject({ text: 'bb.seen', value: 1 });
    expect(trace.why(a, 5)).toBeNull();
  });

  it('keeps the last N frames (ring buffer) and forgets the why of frames that left it', () => {
    const a = new Agent(compile(fleeOrPatrol), 1);
    const trace = a.watch(3);
    a.self = { hp: 50 };
    for (let k = 1; k <= 5; k++) a.tick(k * 0.05, 0.05, new DecisionBuffer());
    expect(trace.frames().map((f) => f.tick)).toEqual([2, 3, 4]);
    expect(trace.why(a, 1)).toBeNull();
    expect(trace.why(a, 2)).not.toBeNull();
    a.watch(2); // resize keeps the newest
    expect(trace.frames().map((f) => f.tick)).toEqual([3, 4]);
    a.watch(5);
    a.tick(0.3, 0.05, new DecisionBuffer());
    expect(trace.frames().map((f) => f.tick)).toEqual([3, 4, 5]);
    a.unwatch();
    expect(a.trace).toBeNull();
  });

  it('exposes decorator and service state: repeat count, cooldown and wait time left, next service run', () => {
    const def: TreeDefinition = {
      blackboard: { x: 0 },
      root: {
        type: 'sequence',
        services: [{ every: 0.5, values: { x: 'bb.x + 1' } }],
        children: [
          { type: 'repeat', times: 3, child: { type: 'condition', expr: 'true' } },
          { type: 'cooldown', seconds: 2, child: { type: 'condition', expr: 'self.ok' } },
          { type: 'wait', seconds: 1 },
        ],
      },
    };
    const a = new Agent(compile(def), 1);
    const trace = a.watch(10);
    a.self = { ok: true };
    a.tick(0, 0, new DecisionBuffer());
    let f = trace.latest()!;
    expect(f.nodes[0]!.state).toEqual({ nextDue: 0.5 });
    expect(f.nodes[1]!.state).toEqual({ count: 1, limit: 3 });
    for (const t of [0.1, 0.2]) a.tick(t, 0.1, new DecisionBuffer());
    f = trace.latest()!;
    expect(f.nodes[1]!.state).toEqual({ count: 3, limit: 3 });
    expect(f.nodes[3]!.state).toEqual({ left: 2 });
    expect(f.nodes[5]!.state).toEqual({ left: 1 });
    a.tick(0.6, 0.4, new DecisionBuffer());
    f = trace.latest()!;
    expect(f.nodes[0]!.state).toEqual({ nextDue: 1 });
    expect(f.nodes[3]!.state!['left']).toBeCloseTo(1.6);
    expect(f.nodes[5]!.state!['left']).toBeCloseTo(0.6);
    expect(f.changed).toEqual(['x']);
    const why = trace.why(a, f.tick)!;
    expect(why.checks.map((c) => [c.kind, c.source])).toEqual([['service', 'bb.x + 1']]);
  });

  it('records an agent stopped by a plugin error, and logs with their node', () => {
    const def: TreeDefinition = { root: { type: 'sequence', children: [{ type: 'log', message: "'hello'" }, { type: 'action', action: 'go' }] } };
    const a = new Agent(compile(def), 1);
    const trace = a.watch(10);
    const out = new DecisionBuffer(true);
    a.tick(0, 0, out);
    expect(trace.latest()!.events).toEqual([
      { kind: 'log', node: 1, level: 'debug', message: 'hello' },
      { kind: 'action', node: 2, seq: 1, action: 'go', args: {} },
    ]);
    expect(out.logs).toEqual([[1, 'debug', 'hello']]);
    a.stop(out, 'E_PLUGIN', 'boom');
    expect(out.cancels).toEqual([[1, 1]]);
  });

  it('copies the observation and blackboard as plain data: functions, cycles and __proto__ keys cannot leak into a frame', () => {
    const def: TreeDefinition = { blackboard: { memo: null }, root: { type: 'condition', expr: 'self.hp > 0' } };
    const a = new Agent(compile(def), 1);
    const trace = a.watch(5);
    const self: Record<string, unknown> = JSON.parse('{"hp": 5, "__proto__": {"polluted": true}, "pos": [1, 2]}') as Record<string, unknown>;
    self['me'] = self;
    self['fn'] = () => 1;
    a.self = self;
    a.bb['memo'] = new Map([[1, 2]]);
    a.tick(0, 0, new DecisionBuffer());
    const f = trace.latest()!;
    expect(f.self).toEqual({ hp: 5, pos: [1, 2], me: null, fn: null, ['__proto__']: { polluted: true } });
    expect(Object.getPrototypeOf(f.self)).toBe(Object.prototype);
    expect((f.self as { polluted?: unknown }).polluted).toBeUndefined();
    expect(f.bb['memo']).toEqual(new Map([[1, 2]]));
    expect(f.nodes[0]!.status).toBe('success');
    (self['pos'] as number[])[0] = 9; // the frame holds a copy
    expect((f.self as { pos: number[] }).pos).toEqual([1, 2]);
  });
});
