// `succeeder` and `failer`: any finished result of the child becomes success / failure.

import { js } from '../codegen.js';
import { defineNode, type NodeKind } from '../node.js';
import { Status, type TickStatus } from '../status.js';

function forced(type: string, result: TickStatus, word: string): NodeKind {
  return defineNode({
    type,
    category: 'decorator',
    description: `Any finished result of the child → ${word}; running unchanged.`,
    params: {},
    build(b) {
      const child = b.child(0);
      return {
        tick: (a) => (child(a) === Status.RUNNING ? Status.RUNNING : result),
        emit: (e, _fresh, t) => js`${e.child(0, t)}if (${t} !== ${Status.RUNNING}) ${t} = ${result};\n`,
      };
    },
  });
}

export const succeeder = forced('succeeder', Status.SUCCESS, 'success');
export const failer = forced('failer', Status.FAILURE, 'failure');
