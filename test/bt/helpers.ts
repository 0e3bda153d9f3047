// Test helpers for engine semantics: scripted leaves (like py_trees' StatusQueue) and a tiny tree runner.

import {
  Agent,
  compileTree,
  DecisionBuffer,
  defineNode,
  NodeCatalog,
  STATUS_NAMES,
  Status,
  type CompiledTree,
  type NodeDefinition,
  type StatusName,
  type TreeDefinition,
} from '../../src/bt/index.js';

type Word = 'success' | 'failure' | 'running';
const CODES: Record<Word, typeof Status.SUCCESS | typeof Status.FAILURE | typeof Status.RUNNING> = {
  success: Status.SUCCESS,
  failure: Status.FAILURE,
  running: Status.RUNNING,
};

/**
 * `{ type: 'scripted', script: ['running', 'success'] }`: returns the next status of its script each time it is
 * ticked (the last one repeats); counts its fresh starts and halts in the blackboard-free `log` of the test.
 */
export const scriptedKind = defineNode({
  type: 'scripted',
  category: 'leaf',
  description: 'Test leaf returning scripted statuses.',
  // A comma-separated string: compileTree validates, and no parameter type is a list of words.
  params: { script: { type: 'string', description: 'statuses per tick, comma-separated' } },
  build(b) {
    const script = (b.param<string | undefined>('script') ?? 'success').split(',').map((w) => CODES[w as Word]);
    const name = (b.definition['name'] as string | undefined) ?? `#${b.index}`;
    const pos = b.slots(1);
    return {
      tick(a, fresh) {
        events.push(`${fresh ? 'start' : 'tick'} ${name}`);
        const k = a.slots[pos]!;
        a.slots[pos] = k + 1;
        return script[Math.min(k, script.length - 1)]!;
      },
      onHalt() {
        events.push(`halt ${name}`);
      },
    };
  },
});

/** Starts/ticks/halts of scripted leaves, in order; cleared by `tree()`. */
export const events: string[] = [];

export function testCatalog(): NodeCatalog {
  const catalog = new NodeCatalog();
  catalog.register(scriptedKind);
  return catalog;
}

/** `s('a', 'running', 'success')` → a named scripted leaf. */
export function s(name: string, ...script: Word[]): NodeDefinition {
  return { type: 'scripted', name, script: script.join(',') };
}

/** Compiles `root` (plus optional other trees for subtrees) into a tree named 'test'. */
export function tree(root: NodeDefinition, blackboard: Record<string, unknown> = {}, others: Record<string, TreeDefinition> = {}): CompiledTree {
  events.length = 0;
  const defs: Record<string, TreeDefinition> = { ...others, test: { blackboard, root } };
  return compileTree('test', (n) => defs[n], testCatalog());
}

/** An agent plus a decision buffer and a clock; `step()` ticks once and returns the decisions. */
export class Harness {
  readonly agent: Agent;
  readonly out = new DecisionBuffer(true);
  time = 0;
  readonly period: number;

  constructor(t: CompiledTree, opts: { period?: number; seed?: number; id?: number | string } = {}) {
    this.agent = new Agent(t, opts.id ?? 1, { seed: opts.seed ?? 42 });
    this.period = opts.period ?? 0.1;
  }

  /** Ticks once; time advances by the period (first tick at time 0). */
  step(): DecisionBuffer {
    this.out.clear();
    this.agent.tick(this.time, this.period, this.out);
    this.time = Math.round((this.time + this.period) * 1e9) / 1e9;
    return this.out;
  }

  /** Status of the node called `name` (or at index). */
  status(name: string | number): StatusName {
    const t = this.agent.tree;
    const i = typeof name === 'number' ? name : t.nodes.findIndex((n) => n.name === name);
    if (i < 0) throw new Error(`no node named ${name}`);
    return STATUS_NAMES[this.agent.status[i]!]!;
  }

  /** Statuses of every named node, as `{ name: status }`. */
  statuses(): Record<string, StatusName> {
    const out: Record<string, StatusName> = {};
    this.agent.tree.nodes.forEach((n, i) => {
      if (n.name !== null) out[n.name] = STATUS_NAMES[this.agent.status[i]!]!;
    });
    return out;
  }
}
