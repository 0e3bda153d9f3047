// `sequence`: ticks children in order; the first failure fails it, all successes succeed.

import { defineNode } from '../node.js';
import { Status } from '../status.js';
import { orderedComposite, REACTIVE_PARAM } from './ordered.js';

export const sequence = defineNode({
  type: 'sequence',
  category: 'composite',
  description: "Ticks children in order. A child's failure → failure; running → running (resumed there next tick); all success → success.",
  params: { reactive: REACTIVE_PARAM },
  build: (b) => orderedComposite(b, Status.FAILURE, Status.SUCCESS),
});
