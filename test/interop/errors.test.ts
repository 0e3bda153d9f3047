// Import errors: everything without an exact Canopy equivalent is refused with file:line:column, a sentence saying
// what to do instead, and a stable code — never a silent approximation. All errors of a file come back at once.

import { describe, expect, it } from 'vitest';
import { importXml } from '../../src/interop/index.js';
import { doc, importErrors, imported } from './drive.js';

/** One tree whose root element starts at line 4, column 3 of the document. */
const one = (node: string, models = ''): string => doc(`<BehaviorTree ID="T">\n  ${node}\n</BehaviorTree>${models}`);

describe('import errors', () => {
  it('malformed XML: the parser\'s line and column', () => {
    expect(importErrors('<root BTCPP_format="4">\n  <BehaviorTree ID="T">\n    <Sequence>\n  </BehaviorTree>\n</root>')).toEqual([
      "bad.xml:4:3: the file is not valid XML: Expected closing tag 'Sequence' (opened in line 3, col 5) instead of closing tag 'BehaviorTree'. [E_XML_PARSE]",
    ]);
  });

  it('not a BehaviorTree.CPP document, or an older format', () => {
    expect(importErrors('<tree/>')).toEqual(['bad.xml:1:1: a BehaviorTree.CPP file has one <root BTCPP_format="4"> element around its trees [E_XML_SHAPE]']);
    expect(importErrors('<root BTCPP_format="3"><BehaviorTree ID="T"><AlwaysSuccess/></BehaviorTree></root>')[0]).toBe(
      "bad.xml:1:1: BTCPP_format=\"3\": only version 4 is read; convert older files with BehaviorTree.CPP's convert_v3_to_v4 script or by saving them in Groot2 [E_XML_UNSUPPORTED]",
    );
  });

  it.each([
    ['<SequenceWithMemory><AlwaysSuccess/></SequenceWithMemory>', 'E_XML_UNSUPPORTED', 'SequenceWithMemory resumes at the failed child'],
    ['<RunOnce><AlwaysSuccess/></RunOnce>', 'E_XML_UNSUPPORTED', 'write then_skip="false"'],
    ['<AlwaysSuccess _skipIf="done"/>', 'E_XML_UNSUPPORTED', '_skipIf makes the node return SKIPPED'],
    ['<AlwaysSuccess _while="ok"/>', 'E_XML_UNSUPPORTED', '_while makes the node return SKIPPED'],
    ['<AlwaysSuccess _onHalted="x := 1"/>', 'E_XML_UNSUPPORTED', '_onHalted has no Canopy equivalent'],
    ['<Switch2 variable="{v}" case_1="a"><AlwaysSuccess/><AlwaysSuccess/><AlwaysSuccess/></Switch2>', 'E_XML_UNSUPPORTED', 'Switch has no Canopy node'],
    ['<ParallelAll max_failures="2"><AlwaysSuccess/><AlwaysSuccess/></ParallelAll>', 'E_XML_UNSUPPORTED', 'max_failures="2"'],
    ['<Parallel success_count="3"><AlwaysSuccess/><AlwaysSuccess/></Parallel>', 'E_XML_NODE', 'success_count="3" needs between 1 and 2 successes of 2 children'],
    ['<Repeat num_cycles="{n}"><AlwaysSuccess/></Repeat>', 'E_XML_NODE', 'Canopy needs this number in the tree, not in the blackboard'],
    ['<Repeat num_cycles="0"><AlwaysSuccess/></Repeat>', 'E_XML_NODE', 'use a number ≥ 1, or -1 for forever'],
    ['<Inverter><AlwaysSuccess/><AlwaysFailure/></Inverter>', 'E_XML_NODE', 'needs exactly 1 child node, found 2'],
    ['<Sequence foo="1"><AlwaysSuccess/></Sequence>', 'E_XML_NODE', "unknown port 'foo' (it has no ports)"],
    ['<AlwaysSuccess _color="red"/>', 'E_XML_UNSUPPORTED', "unknown attribute '_color'"],
    ['<Script code="msg := \'hp: \' .. hp"/>', 'E_XML_SCRIPT', "string concatenation '..'"],
    ['<Script code="hp &lt; 3"/>', 'E_XML_SCRIPT', 'computes a value nobody uses'],
    ['<ScriptCondition code="a := 1"/>', 'E_XML_SCRIPT', 'must be one expression (no assignments)'],
    ['<WhileDoElse><AlwaysSuccess/><AlwaysSuccess/></WhileDoElse>', 'E_XML_UNSUPPORTED', 'the first child of WhileDoElse must be a ScriptCondition'],
    ['<SubTree ID="Nowhere"/>', 'E_XML_NODE', 'no <BehaviorTree ID="Nowhere"> in this file'],
    ['<Patrol/>', 'E_XML_NODE', "unknown node 'Patrol': declare it in <TreeNodesModel>"],
  ])('%s → %s at 4:3', (node, code, text) => {
    const errors = importErrors(one(node));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(new RegExp(`^bad\\.xml:4:3: <\\w+>: .*\\[${code}\\]$`));
    expect(errors[0]).toContain(text);
  });

  it('a custom condition needs a plugin of that name (Canopy has no remote conditions)', () => {
    expect(importErrors(one('<IsDoorOpen/>', '<TreeNodesModel><Condition ID="IsDoorOpen"/></TreeNodesModel>'))).toEqual([
      "bad.xml:4:3: <IsDoorOpen>: 'IsDoorOpen' is a condition: Canopy has no remote conditions; register a plugin condition named 'IsDoorOpen', or write the test as a ScriptCondition over values the game sends [E_XML_UNSUPPORTED]",
    ]);
  });

  it('a port the TreeNodesModel does not declare', () => {
    expect(importErrors(one('<Open door="{d}" force="3"/>', '<TreeNodesModel><Action ID="Open"><input_port name="door"/></Action></TreeNodesModel>'))).toEqual([
      'bad.xml:4:3: <Open>: port \'force\' is not declared for Open in <TreeNodesModel>; add <input_port name="force"/> there [E_XML_NODE]',
    ]);
  });

  it('engine validation errors of the translated tree point at the XML element they came from', () => {
    const text = doc('<BehaviorTree ID="T">\n  <Sequence>\n    <ScriptCondition code="hp &lt;"/>\n    <CanopyLog message="nearst(world.x)"/>\n  </Sequence>\n</BehaviorTree>');
    expect(importErrors(text)).toEqual([
      "bad.xml:5:5: <ScriptCondition> (expr 'bb.hp <', column 8): the expression ends too early: a value is missing [E_EXPR_SYNTAX]",
      "bad.xml:6:5: <CanopyLog> (message 'nearst(world.x)', column 1): unknown function 'nearst' (did you mean 'nearest'?) [E_EXPR_UNKNOWN_FUNCTION]",
    ]);
  });

  it('reports every problem of the file at once, with the tree it is in', () => {
    const r = importXml(doc('<BehaviorTree ID="A">\n  <SequenceWithMemory><AlwaysSuccess/></SequenceWithMemory>\n</BehaviorTree>\n<BehaviorTree ID="B">\n  <RunOnce><Boom/></RunOnce>\n</BehaviorTree>'), { file: 'two.xml' });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors.map((e) => [e.tree, e.line, e.column, e.code])).toEqual([
      ['A', 4, 3, 'E_XML_UNSUPPORTED'],
      ['B', 7, 3, 'E_XML_UNSUPPORTED'],
      ['B', 7, 12, 'E_XML_NODE'],
    ]);
  });

  it('duplicate tree IDs, a tree with two roots, an include that cannot be read', () => {
    expect(importErrors(doc('<BehaviorTree ID="T"><AlwaysSuccess/></BehaviorTree>\n<BehaviorTree ID="T"><AlwaysSuccess/></BehaviorTree>'))).toEqual([
      'bad.xml:4:1: a second <BehaviorTree ID="T">; tree IDs must be unique [E_XML_SHAPE]',
    ]);
    expect(importErrors(doc('<BehaviorTree ID="T"><AlwaysSuccess/><AlwaysFailure/></BehaviorTree>'))).toEqual([
      'bad.xml:3:1: <BehaviorTree ID="T"> must hold exactly one root node, found 2 [E_XML_SHAPE]',
    ]);
    expect(importErrors(doc('<include path="missing.xml"/>\n<BehaviorTree ID="T"><AlwaysSuccess/></BehaviorTree>'))).toEqual([
      "bad.xml:3:1: cannot read the included file 'missing.xml' [E_XML_INCLUDE]",
    ]);
  });
});

describe('SubTree ports against one blackboard per agent', () => {
  const model = '<TreeNodesModel><Action ID="Go"><input_port name="to"/></Action></TreeNodesModel>';
  const two = (call: string, sub: string): string => doc(`<BehaviorTree ID="Main">\n  <Sequence><Script code="goal := 1; spot := 2"/>${call}</Sequence>\n</BehaviorTree>\n<BehaviorTree ID="Sub">${sub}</BehaviorTree>${model}`);

  it('refuses a subtree writing a port that BehaviorTree.CPP would pass back to a differently named key', () => {
    expect(importErrors(two('<SubTree ID="Sub" target="{goal}"/>', '<Script code="target := 5"/>'))).toEqual([
      `bad.xml:4:50: <SubTree ID="Sub">: 'Sub' writes 'target', which BehaviorTree.CPP passes back to 'goal'; Canopy copies ports into the subtree only. Give the key the same name in both trees (target="{target}") [E_XML_UNSUPPORTED]`,
    ]);
  });

  it('refuses keys both trees use without _autoremap (BehaviorTree.CPP keeps them apart), accepts them with it', () => {
    expect(importErrors(two('<SubTree ID="Sub"/>', '<Go to="{spot}"/>'))[0]).toContain("'Main' and 'Sub' both use the key 'spot'");
    expect(() => imported(two('<SubTree ID="Sub" _autoremap="true"/>', '<Go to="{spot}"/>'))).not.toThrow();
    expect(() => imported(two('<SubTree ID="Sub" spot="{spot}"/>', '<Go to="{spot}"/>'))).not.toThrow();
  });

  it('refuses a port that would overwrite the caller\'s key of the same name', () => {
    expect(importErrors(two('<SubTree ID="Sub" spot="{goal}"/>', '<Go to="{spot}"/>'))[0]).toContain("the port 'spot' would overwrite the caller's own key 'spot'");
  });

  it('an IfThenElse in a subtree and one in its caller do not share their branch memory', () => {
    const r = imported(doc(`<BehaviorTree ID="Main"><IfThenElse><ScriptCondition code="a"/><SubTree ID="Sub" _autoremap="true"/><AlwaysFailure/></IfThenElse></BehaviorTree>
      <BehaviorTree ID="Sub"><IfThenElse><ScriptCondition code="b"/><AlwaysSuccess/><AlwaysFailure/></IfThenElse></BehaviorTree>`));
    const hidden = (t: string): string[] => Object.keys(r.trees[t]!.blackboard!).filter((k) => k.startsWith('_'));
    expect(hidden('Main')).toEqual(['_ifThenElse1']);
    expect(hidden('Sub')).toEqual(['_ifThenElse2']);
  });
});

it('main_tree_to_execute must name a tree', () => {
  expect(importErrors('<root BTCPP_format="4" main_tree_to_execute="Mian">\n<BehaviorTree ID="Main"><AlwaysSuccess/></BehaviorTree></root>')).toEqual([
    'bad.xml:1:1: main_tree_to_execute="Mian" names no <BehaviorTree> of this file or its includes [E_XML_SHAPE]',
  ]);
});
