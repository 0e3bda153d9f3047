// BehaviorTree.CPP v4 nodes → Canopy nodes. Every mapping is exact or an error naming what to do instead;
// docs/interop.md has the table and the documented differences (Repeat/Retry and Parallel timing, SubTree ports).

import { custom, subtree } from './import-custom.js';
import { CANOPY_TREE, children, fail, intPort, named, onlyPorts, portsOf, type ConvertContext, type Node } from './import-context.js';
import { applyConditions, ifThenElse, script, scriptCondition, setBlackboard, whileDoElse } from './import-scripts.js';
import { InteropErrorCode } from './errors.js';
import type { XmlElement } from './xml.js';

export { ACTION_OPTIONS, CANOPY_PREFIX, CANOPY_TREE, type ConvertContext, type NodeModel, type SubtreeCall } from './import-context.js';

const UNSUPPORTED: Readonly<Record<string, string>> = {
  SequenceWithMemory:
    'SequenceWithMemory resumes at the failed child on the next tick; Canopy has no such sequence. Use Sequence (restarts from the first child after a failure), or keep progress in the blackboard and guard the finished steps',
  AsyncSequence: 'AsyncSequence yields after each child; use Sequence (Canopy never blocks a tick)',
  AsyncFallback: 'AsyncFallback yields after each child; use Fallback (Canopy never blocks a tick)',
  Switch2: 'Switch has no Canopy node; use a Fallback of children guarded by ScriptCondition checks of the variable',
  Switch3: 'Switch has no Canopy node; use a Fallback of children guarded by ScriptCondition checks of the variable',
  Switch4: 'Switch has no Canopy node; use a Fallback of children guarded by ScriptCondition checks of the variable',
  Switch5: 'Switch has no Canopy node; use a Fallback of children guarded by ScriptCondition checks of the variable',
  Switch6: 'Switch has no Canopy node; use a Fallback of children guarded by ScriptCondition checks of the variable',
  TryCatch: 'TryCatch has no Canopy node; use a Fallback whose last child does the cleanup and then fails (AlwaysFailure)',
  ManualSelector: 'ManualSelector needs a person at a terminal; it has no place in a game server',
  LoopInt: 'Loop nodes consume a queue inside the blackboard; Canopy has no queues. Pass one item at a time from the game',
  LoopDouble: 'Loop nodes consume a queue inside the blackboard; Canopy has no queues. Pass one item at a time from the game',
  LoopString: 'Loop nodes consume a queue inside the blackboard; Canopy has no queues. Pass one item at a time from the game',
  LoopBool: 'Loop nodes consume a queue inside the blackboard; Canopy has no queues. Pass one item at a time from the game',
  ConsumeQueue: 'ConsumeQueue has no Canopy equivalent; pass one item at a time from the game',
  Precondition: "the Precondition decorator returns its 'else' status while the condition is false; use the _failureIf attribute (or a ScriptCondition in a Sequence) instead",
  SkipUnlessUpdated: 'SkipUnlessUpdated returns SKIPPED, a status Canopy does not have',
  WaitValueUpdate: 'WaitValueUpdate has no Canopy equivalent; wait on the value with a condition in a RetryUntilSuccessful, or let the game send a snapshot',
  EntryUpdated: 'EntryUpdated has no Canopy equivalent',
  UnsetBlackboard: 'UnsetBlackboard has no Canopy equivalent: Canopy keys always exist; use Script to write null',
};

/** Converts one XML node element (with pre/post-condition attributes) into a Canopy node. */
export function convertNode(el: XmlElement, ctx: ConvertContext): Node {
  const node = applyConditions(el, convertBase(el, ctx), ctx);
  if (!ctx.origin.has(node)) ctx.origin.set(node, el);
  return node;
}

function convertBase(el: XmlElement, ctx: ConvertContext): Node {
  // `<Action ID="moveTo"/>` is the explicit form of `<moveTo/>`.
  if (['Action', 'Condition', 'Control', 'Decorator', 'SubTree'].includes(el.tag) && el.tag !== 'SubTree' && el.attrs['ID'] !== undefined) {
    return convertBase({ ...el, tag: el.attrs['ID'] }, ctx);
  }
  const unsupported = UNSUPPORTED[el.tag];
  if (unsupported !== undefined) {
    fail(ctx, el, InteropErrorCode.XML_UNSUPPORTED, unsupported);
    // The children are still read, so that every problem of the file is reported at once.
    for (const c of el.children) ctx.convert(c);
    return { type: 'succeed' };
  }
  const ports = portsOf(el, ctx);
  const composite = (type: string, extra: Record<string, unknown> = {}, allowed: readonly string[] = []): Node => {
    onlyPorts(el, ctx, ports, allowed);
    const kids = children(el, ctx, 1);
    return named(el, { type, ...extra, children: kids ?? [] });
  };
  const decorator = (type: string, extra: Record<string, unknown> = {}): Node => {
    const kids = children(el, ctx, 1, 1);
    return named(el, { type, ...extra, child: kids?.[0] ?? { type: 'succeed' } });
  };
  switch (el.tag) {
    case CANOPY_TREE:
      for (const c of el.children) ctx.convert(c);
      return fail(ctx, el, InteropErrorCode.XML_SHAPE, `${CANOPY_TREE} carries a tree's blackboard and description; keep it directly under <BehaviorTree>, around the root node`);
    case 'Sequence':
      return composite('sequence');
    case 'ReactiveSequence':
      return composite('sequence', { reactive: true });
    case 'Fallback':
      return composite('selector');
    case 'ReactiveFallback':
      return composite('selector', { reactive: true });
    case 'Parallel':
      return parallel(el, ctx, ports);
    case 'ParallelAll': {
      const max = intPort(el, ctx, ports, 'max_failures', 1);
      if (max !== null && max !== 1) {
        return fail(ctx, el, InteropErrorCode.XML_UNSUPPORTED, `max_failures="${max}": Canopy's 'all' fails when any child failed (max_failures="1"); count failures in the blackboard with _onFailure scripts if you need more`);
      }
      return composite('all', {}, ['max_failures']);
    }
    case 'IfThenElse':
      return ifThenElse(el, ctx, ports);
    case 'WhileDoElse':
      return whileDoElse(el, ctx, ports);
    case 'Inverter':
      onlyPorts(el, ctx, ports, []);
      return decorator('inverter');
    case 'ForceSuccess':
      onlyPorts(el, ctx, ports, []);
      return decorator('succeeder');
    case 'ForceFailure':
      onlyPorts(el, ctx, ports, []);
      return decorator('failer');
    case 'KeepRunningUntilFailure':
      onlyPorts(el, ctx, ports, []);
      return decorator('keepRunningUntilFailure');
    case 'Repeat':
      return counted(el, ctx, ports, 'num_cycles', 'repeat', 'times');
    case 'RetryUntilSuccessful':
      return counted(el, ctx, ports, 'num_attempts', 'retry', 'attempts');
    case 'Timeout':
      return millis(el, ctx, ports, 'msec', (seconds) => decorator('timeLimit', { seconds }));
    case 'Delay':
      return millis(el, ctx, ports, 'delay_msec', (seconds) => decorator('delay', { seconds }));
    case 'RunOnce': {
      onlyPorts(el, ctx, ports, ['then_skip']);
      const skip = (ports.get('then_skip') ?? 'true').trim().toLowerCase();
      if (skip !== 'false') {
        for (const c of el.children) ctx.convert(c);
        return fail(ctx, el, InteropErrorCode.XML_UNSUPPORTED, 'RunOnce with then_skip="true" (the default) returns SKIPPED after the first run, a status Canopy does not have; write then_skip="false" to repeat the first result (Canopy\'s once)');
      }
      return decorator('once');
    }
    case 'Sleep':
      return millis(el, ctx, ports, 'msec', (seconds) => (children(el, ctx, 0, 0), named(el, { type: 'wait', seconds })));
    case 'AlwaysSuccess':
      onlyPorts(el, ctx, ports, []);
      children(el, ctx, 0, 0);
      return named(el, { type: 'succeed' });
    case 'AlwaysFailure':
      onlyPorts(el, ctx, ports, []);
      children(el, ctx, 0, 0);
      return named(el, { type: 'fail' });
    case 'Script':
      return script(el, ctx, ports);
    case 'ScriptCondition':
      return scriptCondition(el, ctx, ports);
    case 'SetBlackboard':
      return setBlackboard(el, ctx, ports);
    case 'SubTree':
      return subtree(el, ctx, ports);
    default:
      return custom(el, ctx, ports);
  }
}

function parallel(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>): Node {
  onlyPorts(el, ctx, ports, ['success_count', 'failure_count']);
  const n = el.children.length;
  const succ = intPort(el, ctx, ports, 'success_count', -1);
  const failN = intPort(el, ctx, ports, 'failure_count', 1);
  const kids = children(el, ctx, 1);
  if (succ === null || failN === null || kids === null) return { type: 'succeed' };
  // BehaviorTree.CPP: a negative count means "all but |count|-1" (n + count + 1).
  const success = succ < 0 ? n + succ + 1 : succ;
  const failure = failN < 0 ? n + failN + 1 : failN;
  if (success < 1 || success > n) return fail(ctx, el, InteropErrorCode.XML_NODE, `success_count="${succ}" needs between 1 and ${n} successes of ${n} children`);
  if (failure < 1 || failure > n) return fail(ctx, el, InteropErrorCode.XML_NODE, `failure_count="${failN}" needs between 1 and ${n} failures of ${n} children`);
  const node: Node = { type: 'parallel' };
  if (success !== n) node['success'] = success;
  if (failure !== 1) node['failure'] = failure;
  node['children'] = kids;
  return named(el, node);
}

function counted(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>, port: string, type: string, param: string): Node {
  onlyPorts(el, ctx, ports, [port]);
  const count = intPort(el, ctx, ports, port, undefined);
  const kids = children(el, ctx, 1, 1);
  if (count === null || kids === null) return { type: 'succeed' };
  if (count === 0 || count < -1) return fail(ctx, el, InteropErrorCode.XML_NODE, `${port}="${count}": use a number ≥ 1, or -1 for forever`);
  return named(el, { type, [param]: count, child: kids[0]! });
}

function millis(el: XmlElement, ctx: ConvertContext, ports: Map<string, string>, port: string, make: (seconds: number) => Node): Node {
  onlyPorts(el, ctx, ports, [port]);
  const ms = intPort(el, ctx, ports, port, undefined);
  if (ms === null) return { type: 'succeed' };
  if (ms < 0) return fail(ctx, el, InteropErrorCode.XML_NODE, `${port}="${ms}" must not be negative`);
  return make(ms / 1000);
}

