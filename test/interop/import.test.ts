// Importing BehaviorTree.CPP v4 XML: realistic files (several trees, a TreeNodesModel, an include, Groot2's editor
// attributes), every listed node's translation, and its behaviour when ticked, against BehaviorTree.CPP's semantics.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeCatalog, registerPlugin } from '../../src/bt/index.js';
import { exportXml, importXml } from '../../src/interop/index.js';
import { Driver, doc, imported } from './drive.js';

const FIXTURES = join(import.meta.dirname, 'fixtures');
const fixture = (name: string): string => readFileSync(join(FIXTURES, name), 'utf8');

describe('a BehaviorTree.CPP project file', () => {
  const r = imported(fixture('warehouse-robot.xml'), undefined, join(FIXTURES, 'warehouse-robot.xml'));

  it('imports every BehaviorTree, the included file\'s too, and picks main_tree_to_execute', () => {
    expect(Object.keys(r.trees).toSorted()).toEqual(['Deliver', 'Dock', 'Main']);
    expect(r.main).toBe('Main');
    expect(r.library.names()).toEqual(['Deliver', 'Dock', 'Main']);
  });

  it('declares every blackboard key a tree uses, and the ports callers pass to it', () => {
    expect(Object.keys(r.trees['Main']!.blackboard!).filter((k) => !k.startsWith('_')).toSorted()).toEqual([
      'attempts', 'battery', 'drop_pose', 'item', 'obstacle_close', 'pick_pose', 'picked',
    ]);
    expect(r.trees['Deliver']!.blackboard).toMatchObject({ cargo: null, target: null, deliveries: null, lights_on: null, queue_length: null });
  });

  it('translates custom actions with their ports (model defaults filled in) and {key} references', () => {
    const dock = r.trees['Dock']!.root;
    expect(dock).toEqual({
      type: 'sequence',
      children: [
        { type: 'action', action: 'MoveBase', args: { goal: 'bb.dock_pose', speed: 0.3 } },
        { type: 'action', action: 'Charge', args: { until_percent: 95 } },
      ],
    });
  });

  it('translates controls, decorators, scripts and pre/post-conditions to their Canopy equivalents', () => {
    const main = r.trees['Main']!.root as Record<string, unknown>;
    expect(main['type']).toBe('selector');
    expect(main['reactive']).toBe(true);
    const [emergency, work] = main['children'] as Record<string, unknown>[];
    expect(emergency).toEqual({
      type: 'sequence',
      name: 'emergency',
      reactive: true,
      children: [{ type: 'condition', expr: 'bb.battery < 10 || bb.obstacle_close' }, { type: 'subtree', tree: 'Dock' }],
    });
    const [init, retry] = (work!['children'] as Record<string, unknown>[]);
    expect(init).toEqual({ type: 'sequence', children: [{ type: 'set', values: { attempts: '0' } }, { type: 'set', values: { picked: 'false' } }] });
    expect(retry).toMatchObject({ type: 'retry', attempts: 3, child: { type: 'sequence' } });
    const steps = (retry!['child'] as Record<string, unknown>)['children'] as Record<string, unknown>[];
    expect(steps[0]).toEqual({ type: 'set', values: { attempts: 'bb.attempts + (1)' } });
    expect(steps[2]).toEqual({
      type: 'timeLimit',
      seconds: 2.5,
      child: { type: 'sequence', children: [{ type: 'action', action: 'Pick', args: { item: 'bb.item' } }, { type: 'set', values: { picked: 'true' } }] },
    });
  });

  it('exported again and re-imported, it gives the same Canopy trees', () => {
    const again = importXml(exportXml(r.trees, { main: r.main }), { file: 'again.xml' });
    expect(again.ok && again.trees).toEqual(r.trees);
    expect(again.ok && again.main).toBe('Main');
  });

  it('checks and compiles every imported tree with the engine', () => {
    for (const name of r.library.names()) expect(r.library.get(name)!.nodes.length).toBeGreaterThan(1);
  });
});

describe('a file saved by Groot2', () => {
  const text = fixture('groot2-saved.xml');
  const catalog = new NodeCatalog();
  registerPlugin(catalog, {
    name: 'sentry',
    conditions: {
      IsEnemyVisible: { test: (ctx) => (ctx.self as { enemy?: boolean } | null)?.enemy === true },
      InRange: {
        params: { of: { type: 'expression', required: true, description: 'target' }, meters: { type: 'number', required: true, description: 'range' } },
        test: (_ctx, p) => typeof p['of'] === 'number' && p['of'] <= (p['meters'] as number),
      },
    },
  });

  it('ignores the editor attributes and model metadata Groot2 writes (_uid, _fullpath, _collapsed, editable, MetadataFields)', () => {
    const r = imported(text, catalog);
    expect(r.trees['Sentry']).toEqual({
      description: 'Saved by Groot2',
      blackboard: { enemy: null, next_waypoint: null },
      root: {
        type: 'selector',
        children: [
          {
            type: 'sequence',
            name: 'engage',
            children: [
              { type: 'IsEnemyVisible' },
              { type: 'action', action: 'Aim', args: { target: 'bb.enemy' } },
              { type: 'action', action: 'Shoot', args: { target: 'bb.enemy', rounds: 3 } },
            ],
          },
          // Groot2 writes every declared port; an empty one is "not set".
          { type: 'sequence', children: [{ type: 'action', action: 'GoTo', args: { waypoint: 'bb.next_waypoint' } }, { type: 'wait', seconds: 1.5 }] },
        ],
      },
    });
  });

  it('a custom condition with ports becomes the plugin condition with those parameters ({key} reads the key)', () => {
    const r = imported(doc('<BehaviorTree ID="T"><InRange of="{dist}" meters="5"/></BehaviorTree><TreeNodesModel><Condition ID="InRange"><input_port name="of"/><input_port name="meters"/></Condition></TreeNodesModel>'), catalog);
    expect(r.trees['T']).toEqual({ blackboard: { dist: null }, root: { type: 'InRange', of: 'bb.dist', meters: 5 } });
    const d = new Driver(r.library.get('T')!);
    expect([d.tick({ dist: 3 }).done, d.tick({ dist: 8 }).done]).toEqual(['success', 'failure']);
  });

  it('runs: the custom condition is the plugin, the actions go to the game', () => {
    const patrol = new Driver(imported(text, catalog).library.get('Sentry')!);
    expect(patrol.tick().issued).toEqual(['GoTo']);
    const engage = new Driver(imported(text, catalog).library.get('Sentry')!);
    engage.agent.self = { enemy: true };
    expect(engage.tick().issued).toEqual(['Aim']);
    expect(engage.tick({}, { Aim: true }).issued).toEqual(['Shoot']);
    expect(engage.out.actions[0]![3]).toEqual({ target: null, rounds: 3 });
  });
});

describe('node semantics after import (BehaviorTree.CPP behaviour, tick by tick)', () => {
  const model = (...actions: string[]): string => `<TreeNodesModel>${actions.map((a) => `<Action ID="${a}"/>`).join('')}</TreeNodesModel>`;
  const tree = (body: string, ...actions: string[]): Driver => new Driver(imported(doc(`<BehaviorTree ID="T">${body}</BehaviorTree>${model(...actions)}`)).library.get('T')!);

  it('IfThenElse: the condition decides once; a failing then-branch fails the node without running the else-branch', () => {
    const xml = '<IfThenElse><ScriptCondition code="go"/><Then/><Else/></IfThenElse>';
    const d = tree(xml, 'Then', 'Else');
    expect(d.tick({ go: true }).issued).toEqual(['Then']);
    expect(d.tick({ go: false }).issued).toEqual([]); // running branch is resumed, the condition is not re-checked
    expect(d.tick({}, { Then: false })).toEqual({ issued: [], cancelled: [], done: 'failure' });
    const e = tree(xml, 'Then', 'Else');
    expect(e.tick({ go: false }).issued).toEqual(['Else']);
    expect(e.tick({}, { Else: true }).done).toBe('success');
  });

  it('IfThenElse with two children fails when the condition fails', () => {
    const d = tree('<IfThenElse><ScriptCondition code="go"/><Then/></IfThenElse>', 'Then');
    expect(d.tick({ go: false })).toEqual({ issued: [], cancelled: [], done: 'failure' });
  });

  it('WhileDoElse: the condition is re-checked every tick and the other branch is halted', () => {
    const d = tree('<WhileDoElse><ScriptCondition code="go"/><Do/><Else/></WhileDoElse>', 'Do', 'Else');
    expect(d.tick({ go: true }).issued).toEqual(['Do']);
    expect(d.tick({ go: true }).issued).toEqual([]);
    expect(d.tick({ go: false })).toEqual({ issued: ['Else'], cancelled: ['Do'], done: undefined });
    expect(d.tick({ go: true })).toEqual({ issued: ['Do'], cancelled: ['Else'], done: undefined });
    expect(d.tick({}, { Do: false }).done).toBe('failure'); // Do's failure is the node's, Else does not run
  });

  it('pre-conditions: _failureIf before _successIf, both only when the node starts; post-conditions also after a pre-condition decided', () => {
    const xml = `<Sequence><Script code="runs := 0"/>
      <Act _failureIf="blocked" _successIf="skip" _onSuccess="ok := true" _onFailure="ok := false" _post="runs += 1"/></Sequence>`;
    const blocked = tree(xml, 'Act');
    expect(blocked.tick({ blocked: true, skip: true })).toEqual({ issued: [], cancelled: [], done: 'failure' });
    expect(blocked.agent.bb).toMatchObject({ ok: false, runs: 1 });
    const skipped = tree(xml, 'Act');
    expect(skipped.tick({ blocked: false, skip: true })).toEqual({ issued: [], cancelled: [], done: 'success' });
    expect(skipped.agent.bb).toMatchObject({ ok: true, runs: 1 });
    const ran = tree(xml, 'Act');
    expect(ran.tick({ blocked: false, skip: false }).issued).toEqual(['Act']);
    expect(ran.tick({ blocked: true, skip: true }).done).toBeUndefined(); // not re-checked while running
    expect(ran.tick({}, { Act: true }).done).toBe('success');
    expect(ran.agent.bb).toMatchObject({ ok: true, runs: 1 });
  });

  it('Script statements run in order, each seeing the previous write', () => {
    const d = tree('<Script code="a := 1; b := a + 1; b *= 10"/>');
    expect(d.tick().done).toBe('success');
    expect(d.agent.bb).toMatchObject({ a: 1, b: 20 });
  });

  it('Parallel: success_count and failure_count (negative counts: all but |n|-1)', () => {
    const d = tree('<Parallel success_count="-2" failure_count="2"><A/><B/><C/></Parallel>', 'A', 'B', 'C');
    expect(d.tick().issued).toEqual(['A', 'B', 'C']);
    expect(d.tick({}, { A: false }).done).toBeUndefined();
    expect(d.tick({}, { B: true, C: true })).toMatchObject({ done: 'success' }); // 2 of 3 = success_count -2
  });

  it('ParallelAll: every child finishes; failure when one failed', () => {
    const d = tree('<ParallelAll max_failures="1"><A/><B/></ParallelAll>', 'A', 'B');
    d.tick();
    expect(d.tick({}, { A: false }).done).toBeUndefined();
    expect(d.tick({}, { B: true }).done).toBe('failure');
  });

  it('Repeat counts successes (one per tick in Canopy), RetryUntilSuccessful counts failures', () => {
    const rep = tree('<Repeat num_cycles="2"><A/></Repeat>', 'A');
    expect(rep.tick().issued).toEqual(['A']);
    expect(rep.tick({}, { A: true })).toEqual({ issued: [], cancelled: [], done: undefined }); // BehaviorTree.CPP would restart A in this tick
    expect(rep.tick().issued).toEqual(['A']);
    expect(rep.tick({}, { A: true }).done).toBe('success');
    const retry = tree('<RetryUntilSuccessful num_attempts="2"><A/></RetryUntilSuccessful>', 'A');
    retry.tick();
    expect(retry.tick({}, { A: false }).done).toBeUndefined();
    expect(retry.tick().issued).toEqual(['A']);
    expect(retry.tick({}, { A: false }).done).toBe('failure');
  });

  it('Timeout halts its child; Delay and Sleep count tree time', () => {
    const t = tree('<Timeout msec="200"><A/></Timeout>', 'A');
    t.tick();
    t.tick();
    expect(t.tick()).toEqual({ issued: [], cancelled: ['A'], done: 'failure' });
    const delay = tree('<Delay delay_msec="200"><AlwaysSuccess/></Delay>');
    expect([delay.tick().done, delay.tick().done, delay.tick().done]).toEqual([undefined, undefined, 'success']);
    const sleep = tree('<Sleep msec="100"/>');
    expect([sleep.tick().done, sleep.tick().done]).toEqual([undefined, 'success']);
  });

  it('RunOnce then_skip="false" repeats its first result; Inverter, ForceSuccess/Failure, KeepRunningUntilFailure, AlwaysSuccess/Failure', () => {
    const once = tree('<RunOnce then_skip="false"><ScriptCondition code="go"/></RunOnce>');
    expect([once.tick({ go: true }).done, once.tick({ go: false }).done]).toEqual(['success', 'success']);
    expect(tree('<Inverter><AlwaysSuccess/></Inverter>').tick().done).toBe('failure');
    expect(tree('<ForceSuccess><AlwaysFailure/></ForceSuccess>').tick().done).toBe('success');
    expect(tree('<ForceFailure><AlwaysSuccess/></ForceFailure>').tick().done).toBe('failure');
    const keep = tree('<KeepRunningUntilFailure><A/></KeepRunningUntilFailure>', 'A');
    keep.tick();
    keep.tick({}, { A: true });
    expect(keep.tick().issued).toEqual(['A']);
    expect(keep.tick({}, { A: false }).done).toBe('failure');
  });

  it('SequenceWithMemory-free Sequence and Fallback restart as in BehaviorTree.CPP v4', () => {
    const d = tree('<Sequence><A/><B/></Sequence>', 'A', 'B');
    d.tick();
    expect(d.tick({}, { A: true }).issued).toEqual(['B']);
    expect(d.tick({}, { B: false }).done).toBe('failure');
    expect(d.tick().issued).toEqual(['A']); // restarts from the first child
  });

  it('SubTree port remapping writes the caller\'s values into the subtree\'s keys on entry', () => {
    const r = imported(doc(`
      <BehaviorTree ID="Main"><Sequence><Script code="goal := 7"/><SubTree ID="Go" target="{goal}" speed="2.5" label="fast"/></Sequence></BehaviorTree>
      <BehaviorTree ID="Go"><MoveTo to="{target}" speed="{speed}" label="{label}"/></BehaviorTree>
      <TreeNodesModel><Action ID="MoveTo"><input_port name="to"/><input_port name="speed"/><input_port name="label"/></Action></TreeNodesModel>`));
    const d = new Driver(r.library.get('Main')!);
    d.tick();
    expect(d.out.actions[0]![3]).toEqual({ to: 7, speed: 2.5, label: 'fast' });
  });
});

describe('<include>', () => {
  it('reads included files relative to the including file, once each, even when they include each other', () => {
    const files: Record<string, string> = {
      '/p/main.xml': '<root BTCPP_format="4"><include path="sub/a.xml"/><BehaviorTree ID="Main"><SubTree ID="A" _autoremap="true"/></BehaviorTree></root>',
      '/p/sub/a.xml': '<root BTCPP_format="4"><include path="../main.xml"/><include path="b.xml"/><BehaviorTree ID="A"><SubTree ID="B" _autoremap="true"/></BehaviorTree></root>',
      '/p/sub/b.xml': '<root BTCPP_format="4"><include path="./a.xml"/><BehaviorTree ID="B"><AlwaysSuccess/></BehaviorTree></root>',
    };
    const r = importXml(files['/p/main.xml']!, { file: '/p/main.xml', readFile: (p) => files[p] });
    expect(r.ok && Object.keys(r.trees).toSorted()).toEqual(['A', 'B', 'Main']);
    expect(r.ok && r.main).toBe('Main');
  });
});
