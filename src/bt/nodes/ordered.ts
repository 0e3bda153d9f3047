// Shared engine of `sequence` and `selector`: tick children in order until one gives the deciding status.
// A sequence stops on failure, a selector on success; both resume a running child; `reactive` restarts at the first child.

import { ident, joinCode, js } from '../codegen.js';
import { truthy } from '../expr/index.js';
import type { EmitFn, NodeBehavior, NodeBuilder, ParamSpec } from '../node.js';
import { Status, type TickStatus } from '../status.js';

export const REACTIVE_PARAM: ParamSpec = {
  type: 'boolean',
  default: false,
  description: 'Start again from the first child every tick, halting the previously running child if an earlier one now runs or decides.',
};

/**
 * Builds an ordered composite. `decides` is the child status that ends the composite with that status
 * (FAILURE for a sequence, SUCCESS for a selector); `otherwise` is the result when every child passed.
 */
export function orderedComposite(b: NodeBuilder, decides: TickStatus, otherwise: TickStatus): NodeBehavior {
  const n = b.childCount;
  const children = b.children;
  const ticks = children.map((_, k) => b.child(k));
  const cursor = b.slots(1);
  const halt = b.halt;

  if (b.param<boolean>('reactive')) {
    return {
      tick(a, fresh) {
        const previous = fresh ? -1 : a.slots[cursor]!;
        for (let k = 0; k < n; k++) {
          const s = ticks[k]!(a);
          if (s !== Status.RUNNING && s !== decides) continue;
          // An earlier child took over (or decided): the previously running one is abandoned.
          if (previous > k) halt(a, children[previous]!);
          if (s === Status.RUNNING) a.slots[cursor] = k;
          return s;
        }
        return otherwise;
      },
      emit(e, fresh, target) {
        const previous = e.temp();
        const [h, ch] = [e.bind(halt), e.bind(children)];
        const steps = Array.from(
          { length: n },
          (_, k) => js`{\n${e.child(k, target)}}
if (${target} === ${Status.RUNNING} || ${target} === ${decides}) {
  if (${previous} > ${k}) ${h}(a, ${ch}[${previous}]);
  if (${target} === ${Status.RUNNING}) sl[${cursor}] = ${k};
  break ${e.label};
}\n`,
        );
        return js`${previous} = ${fresh} ? -1 : sl[${cursor}];\n${joinCode(steps)}${target} = ${otherwise};\n`;
      },
    };
  }

  // Observer aborts ("lower"/"both" on a selector's children): checked only while a later child runs.
  const lower = children.map((_, k) => b.lowerAbort(k));
  const hasAborts = lower.some((l) => l !== null);

  // The readable semantics; `emit` below is the same logic unrolled for whole-tree compilation, and
  // test/bt/properties.test.ts holds the two to the same statuses and decisions on random trees.
  const tick: NodeBehavior['tick'] = (a, fresh) => {
    let k = fresh ? 0 : a.slots[cursor]!;
    if (hasAborts && !fresh) {
      // A higher-priority child's guard turned true while a later child runs: halt that one, resume there.
      for (let j = 0; j < k; j++) {
        const l = lower[j];
        if (l === null || l === undefined) continue;
        const now = truthy(l.guard(a));
        const before = a.slots[l.slot];
        a.slots[l.slot] = now ? 1 : 0;
        if (now && before === 0) {
          halt(a, children[k]!);
          k = j;
          break;
        }
      }
    }
    for (; k < n; k++) {
      const s = ticks[k]!(a);
      if (s === Status.RUNNING) {
        a.slots[cursor] = k;
        return s;
      }
      if (s === decides) return s;
    }
    return otherwise;
  };

  // The same logic for whole-subtree compilation: children inline, `break label` for `return`.
  const emit: EmitFn = (e, fresh, target) => {
    const k = e.temp();
    let aborts = js``;
    if (hasAborts) {
      // The loop of `tick` unrolled: each lower-abort guard is a direct call, checked while a later child runs.
      const [h, ch] = [e.bind(halt), e.bind(children)];
      const done = ident(`abort${b.index}`);
      const checks = lower.map((l, j) =>
        l === null
          ? js``
          : js`if (${k} > ${j}) {
  const now = ${e.bind(l.guard)}(a) ? true : false;
  const before = sl[${l.slot}];
  sl[${l.slot}] = now ? 1 : 0;
  if (now && before === 0) { ${h}(a, ${ch}[${k}]); ${k} = ${j}; break ${done}; }
}\n`,
      );
      aborts = js`if (!${fresh}) ${done}: {\n${joinCode(checks)}}\n`;
    }
    const cases = Array.from(
      { length: n },
      (_, c) => js`case ${c}: {\n${e.child(c, target)}}
if (${target} === ${Status.RUNNING}) { sl[${cursor}] = ${c}; break ${e.label}; }
if (${target} === ${decides}) break ${e.label};\n`,
    );
    return js`${k} = ${fresh} ? 0 : sl[${cursor}];\n${aborts}switch (${k}) {\n${joinCode(cases)}}\n${target} = ${otherwise};\n`;
  };
  return { tick, emit };
}
