// `succeed`, `fail`, `running`: leaves with a constant result, for tests and stubs.

import { js } from '../codegen.js';
import { defineNode, type NodeKind } from '../node.js';
import { Status, type TickStatus } from '../status.js';

function constant(type: string, result: TickStatus, word: string): NodeKind {
  return defineNode({
    type,
    category: 'leaf',
    description: `Always returns ${word}.`,
    params: {},
    build: () => ({ tick: () => result, emit: (_e, _fresh, t) => js`${t} = ${result};\n` }),
  });
}

export const succeed = constant('succeed', Status.SUCCESS, 'success');
export const fail = constant('fail', Status.FAILURE, 'failure');
export const running = constant('running', Status.RUNNING, 'running');
