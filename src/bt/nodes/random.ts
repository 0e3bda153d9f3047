// `random`: on entry draws one child with the agent's seeded generator (optionally weighted) and returns what it returns.

import { joinCode, js } from '../codegen.js';
import { defineNode } from '../node.js';
import { Status } from '../status.js';

export const random = defineNode({
  type: 'random',
  category: 'composite',
  description: "On entry, picks one child with the agent's seeded random generator (`weights`: one per child) and returns what it returns; a running child is resumed, not re-drawn.",
  params: {
    weights: { type: 'weights', description: 'Relative weight of each child (non-negative, one per child, not all zero). Default: equal.' },
  },
  validate(node, report, { childCount }) {
    const w = node['weights'];
    if (Array.isArray(w)) {
      if (w.length !== childCount) report(`'weights' has ${w.length} entries but the node has ${childCount} children`, 'weights');
      else if (!w.some((x) => typeof x === 'number' && x > 0)) report("'weights' must have at least one positive weight", 'weights');
    }
  },
  build(b) {
    const n = b.childCount;
    const ticks = b.children.map((_, k) => b.child(k));
    const weights = b.param<number[] | undefined>('weights') ?? Array.from({ length: n }, () => 1);
    // Cumulative weights, so a draw is one pass without allocation.
    const cumulative = new Float64Array(n);
    let total = 0;
    for (let k = 0; k < n; k++) cumulative[k] = total += weights[k]!;
    const chosen = b.slots(1);
    return {
      tick(a, fresh) {
        if (fresh) {
          const r = a.random() * total;
          let k = 0;
          while (k < n - 1 && r >= cumulative[k]!) k++;
          a.slots[chosen] = k;
        }
        return ticks[a.slots[chosen]!]!(a);
      },
      emit(e, fresh, t) {
        const cases = Array.from({ length: n }, (_, k) => js`case ${k}: {\n${e.child(k, t)}break;\n}\n`);
        return js`if (${fresh}) {
  const r = a.random() * ${e.bind(total)};
  const cumulative = ${e.bind(cumulative)};
  let k = 0;
  while (k < ${n - 1} && r >= cumulative[k]) k++;
  sl[${chosen}] = k;
}
switch (sl[${chosen}]) {\n${joinCode(cases)}}\n`;
      },
      state: (a) => (a.status[b.index] === Status.IDLE ? null : { child: a.slots[chosen]! }),
    };
  },
});
