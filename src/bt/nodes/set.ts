// `set`: writes blackboard keys from expressions and succeeds.

import { js } from '../codegen.js';
import { defineNode } from '../node.js';
import { Status } from '../status.js';
import { blackboardWriter } from './writes.js';

export const set = defineNode({
  type: 'set',
  category: 'leaf',
  description: 'Writes all `values` (blackboard key → expression) and succeeds. All expressions are evaluated before any key is written.',
  params: { values: { type: 'writes', required: true, description: 'Blackboard key → expression.' } },
  build(b) {
    const writes = b.writes('values');
    const write = blackboardWriter(writes);
    return {
      tick(a) {
        write(a);
        return Status.SUCCESS;
      },
      emit: (e, _fresh, t) => js`${e.writes(writes)}${t} = ${Status.SUCCESS};\n`,
    };
  },
});
