// `all`: ticks every unfinished child each tick and never halts one; fails if any child failed.

import { joinCode, js } from '../codegen.js';
import { defineNode } from '../node.js';
import { Status } from '../status.js';

export const all = defineNode({
  type: 'all',
  category: 'composite',
  description: 'Ticks every child that has not finished, each tick, halting none. Running while any child runs; then failure if any child failed, else success.',
  params: {},
  build(b) {
    const n = b.childCount;
    const ticks = b.children.map((_, k) => b.child(k));
    const results = b.slots(n);
    return {
      tick(a, fresh) {
        const slots = a.slots;
        if (fresh) for (let k = 0; k < n; k++) slots[results + k] = 0;
        let running = false;
        let failed = false;
        for (let k = 0; k < n; k++) {
          let s = slots[results + k]!;
          if (s === 0) {
            s = ticks[k]!(a);
            if (s !== Status.RUNNING) slots[results + k] = s;
          }
          if (s === Status.RUNNING) running = true;
          else if (s === Status.FAILURE) failed = true;
        }
        if (running) return Status.RUNNING;
        return failed ? Status.FAILURE : Status.SUCCESS;
      },
      emit(e, fresh, t) {
        const [running, failed, c] = [e.temp(), e.temp(), e.temp()];
        const reset = joinCode(Array.from({ length: n }, (_, k) => js`sl[${results + k}] = 0; `));
        const steps = Array.from(
          { length: n },
          (_, k) => js`${c} = sl[${results + k}];
if (${c} === 0) {\n${e.child(k, c)}if (${c} !== ${Status.RUNNING}) sl[${results + k}] = ${c};\n}
if (${c} === ${Status.RUNNING}) ${running} = true; else if (${c} === ${Status.FAILURE}) ${failed} = true;\n`,
        );
        return js`if (${fresh}) { ${reset}}\n${running} = false; ${failed} = false;
${joinCode(steps)}${t} = ${running} ? ${Status.RUNNING} : ${failed} ? ${Status.FAILURE} : ${Status.SUCCESS};\n`;
      },
    };
  },
});
