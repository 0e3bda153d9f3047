// `condition`: success when its expression is truthy, else failure; never running.

import { js } from '../codegen.js';
import { truthy } from '../expr/index.js';
import { defineNode } from '../node.js';
import { Status } from '../status.js';

export const condition = defineNode({
  type: 'condition',
  category: 'leaf',
  description: 'success if the expression is truthy, else failure. Never running.',
  params: { expr: { type: 'expression', required: true, description: 'The expression to test.' } },
  build(b) {
    const expr = b.expression('expr')!;
    return {
      tick: (a) => (truthy(expr(a)) ? Status.SUCCESS : Status.FAILURE),
      // A conditional tests truthiness exactly as truthy() does.
      emit: (e, _fresh, target) => js`${target} = ${e.bind(expr)}(a) ? ${Status.SUCCESS} : ${Status.FAILURE};\n`,
    };
  },
});
