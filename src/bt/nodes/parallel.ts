// `parallel`: ticks every unfinished child each tick; success/failure thresholds decide, then the rest is halted.

import { joinCode, js } from '../codegen.js';
import { defineNode } from '../node.js';
import { Status } from '../status.js';

export const parallel = defineNode({
  type: 'parallel',
  category: 'composite',
  description:
    'Ticks every child that has not finished, each tick. `success` successes → success; `failure` failures → failure (also when success can no longer be reached); the still-running children are then halted.',
  params: {
    success: { type: 'number', integer: true, min: 1, description: 'Successes needed (default: all children).' },
    failure: { type: 'number', integer: true, min: 1, default: 1, description: 'Failures that fail the parallel (default 1).' },
  },
  validate(node, report, { childCount }) {
    for (const field of ['success', 'failure'] as const) {
      const v = node[field];
      if (typeof v === 'number' && v > childCount) report(`'${field}' is ${v} but the parallel has only ${childCount} ${childCount === 1 ? 'child' : 'children'}`, field);
    }
  },
  build(b) {
    const n = b.childCount;
    const children = b.children;
    const ticks = children.map((_, k) => b.child(k));
    const needSuccess = b.param<number | undefined>('success') ?? n;
    const needFailure = b.param<number>('failure');
    // One slot per child: 0 still to run, else the status it finished with during this entry.
    const results = b.slots(n);
    const halt = b.halt;
    return {
      tick(a, fresh) {
        const slots = a.slots;
        if (fresh) for (let k = 0; k < n; k++) slots[results + k] = 0;
        let successes = 0;
        let failures = 0;
        for (let k = 0; k < n; k++) {
          let s = slots[results + k]!;
          if (s === 0) {
            s = ticks[k]!(a);
            if (s !== Status.RUNNING) slots[results + k] = s;
          }
          if (s === Status.SUCCESS) successes++;
          else if (s === Status.FAILURE) failures++;
        }
        let outcome: typeof Status.SUCCESS | typeof Status.FAILURE;
        if (successes >= needSuccess) outcome = Status.SUCCESS;
        else if (failures >= needFailure || n - failures < needSuccess) outcome = Status.FAILURE;
        else return Status.RUNNING;
        for (let k = 0; k < n; k++) halt(a, children[k]!);
        return outcome;
      },
      emit(e, fresh, t) {
        const [ok, ko, c] = [e.temp(), e.temp(), e.temp()];
        const reset = joinCode(children.map((_, k) => js`sl[${results + k}] = 0; `));
        const steps = children.map(
          (_, k) => js`${c} = sl[${results + k}];
if (${c} === 0) {\n${e.child(k, c)}if (${c} !== ${Status.RUNNING}) sl[${results + k}] = ${c};\n}
if (${c} === ${Status.SUCCESS}) ${ok}++; else if (${c} === ${Status.FAILURE}) ${ko}++;\n`,
        );
        const [ns, nf, h] = [e.bind(needSuccess), e.bind(needFailure), e.bind(halt)];
        return js`if (${fresh}) { ${reset}}\n${ok} = 0; ${ko} = 0;
${joinCode(steps)}if (${ok} >= ${ns}) ${t} = ${Status.SUCCESS};
else if (${ko} >= ${nf} || ${n} - ${ko} < ${ns}) ${t} = ${Status.FAILURE};
else { ${t} = ${Status.RUNNING}; break ${e.label}; }
${joinCode(children.map((node) => js`${h}(a, ${node});\n`))}`;
      },
    };
  },
});
