// `selector` (alias `fallback`): ticks children in order; the first success succeeds it, all failures fail.

import { defineNode } from '../node.js';
import { Status } from '../status.js';
import { orderedComposite, REACTIVE_PARAM } from './ordered.js';

export const selector = defineNode({
  type: 'selector',
  aliases: ['fallback'],
  category: 'composite',
  description: "Ticks children in order. A child's success → success; running → running (resumed there next tick); all failure → failure. Children may carry abort \"lower\"/\"both\".",
  params: { reactive: REACTIVE_PARAM },
  build: (b) => orderedComposite(b, Status.SUCCESS, Status.FAILURE),
});
