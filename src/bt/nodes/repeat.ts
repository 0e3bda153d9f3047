// `repeat` and `retry`: restart the child after each success (repeat) or failure (retry), one restart per tick.

import { js } from '../codegen.js';
import { defineNode, type NodeKind } from '../node.js';
import { Status, type TickStatus } from '../status.js';

/**
 * Counts child results equal to `counted`; below the limit the child is restarted and the decorator
 * returns running (one repetition per tick, so work per tick stays bounded). The other result ends it.
 */
function repeating(type: string, param: string, counted: TickStatus, description: string): NodeKind {
  return defineNode({
    type,
    category: 'decorator',
    description,
    params: { [param]: { type: 'number', integer: true, min: 1, forever: true, required: true, description: 'How many times (≥ 1), or -1 for forever.' } },
    build(b) {
      const child = b.child(0);
      const limit = b.param<number>(param);
      const count = b.slots(1);
      return {
        tick(a, fresh) {
          if (fresh) a.slots[count] = 0;
          const s = child(a);
          if (s !== counted) return s;
          const done = a.slots[count]! + 1;
          a.slots[count] = done;
          // The child's status is now final, so its next tick (next agent tick) is a fresh start.
          return limit !== -1 && done >= limit ? counted : Status.RUNNING;
        },
        // The limit reaches the generated code through bind, like every value from a tree file:
        // written raw, a string `times` would be code.
        emit: (e, fresh, t) => {
          const max = e.bind(limit);
          return js`if (${fresh}) sl[${count}] = 0;
${e.child(0, t)}if (${t} === ${counted}) {
  const done = sl[${count}] + 1;
  sl[${count}] = done;
  ${t} = ${max} !== -1 && done >= ${max} ? ${counted} : ${Status.RUNNING};
}\n`;
        },
        state: (a) => ({ count: a.slots[count]!, limit }),
      };
    },
  });
}

export const repeat = repeating(
  'repeat',
  'times',
  Status.SUCCESS,
  "Child success counts one; below `times` the child is restarted and repeat returns running (one repetition per tick). Child failure → failure. After `times` successes → success.",
);
export const retry = repeating(
  'retry',
  'attempts',
  Status.FAILURE,
  'Child failure counts one; below `attempts` the child is restarted and retry returns running (one attempt per tick). Child success → success. After `attempts` failures → failure.',
);
