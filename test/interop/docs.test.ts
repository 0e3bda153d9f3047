// docs/interop.md stays true: every interop error code is documented, and every BehaviorTree.CPP node the importer
// maps or refuses appears on the page.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { InteropErrorCode } from '../../src/interop/index.js';

const page = readFileSync(new URL('../../docs/interop.md', import.meta.url), 'utf8');

describe('docs/interop.md', () => {
  it.each(Object.values(InteropErrorCode))('documents %s', (code) => {
    expect(page).toContain(`| \`${code}\` |`);
  });

  it.each([
    'Sequence', 'ReactiveSequence', 'ReactiveFallback', 'Fallback', 'SequenceWithMemory', 'Parallel success_count failure_count', 'ParallelAll',
    'IfThenElse', 'WhileDoElse', 'Inverter', 'ForceSuccess', 'ForceFailure', 'Repeat num_cycles', 'RetryUntilSuccessful num_attempts',
    'KeepRunningUntilFailure', 'Timeout msec', 'Delay delay_msec', 'Sleep msec', 'RunOnce then_skip', 'AlwaysSuccess', 'AlwaysFailure',
    'Script code', 'ScriptCondition code', 'SubTree ID', '_autoremap', '_failureIf', '_successIf', '_onSuccess', '_onFailure', '_post', '_skipIf',
    '_while', '_onHalted', 'TreeNodesModel', 'include',
  ])('maps %s', (name) => {
    expect(page).toContain(name);
  });
});
