// BehaviorTree.CPP scripts → Canopy expressions: names become blackboard keys, operators keep their meaning,
// what Canopy cannot express is refused with a reason.

import { describe, expect, it } from 'vitest';
import { translateScript } from '../../src/interop/index.js';

describe('translateScript', () => {
  it.each([
    ['hp < 30 && !busy', [{ kind: 'expr', expr: 'bb.hp < 30 && ! bb.busy' }], ['busy', 'hp']],
    ["state == 'idle' || @alarm", [{ kind: 'expr', expr: "bb.state == 'idle' || bb.alarm" }], ['alarm', 'state']],
    ['a := 1; b = a * 2.5; c += -b', [
      { kind: 'assign', key: 'a', expr: '1' },
      { kind: 'assign', key: 'b', expr: 'bb.a * 2.5' },
      { kind: 'assign', key: 'c', expr: 'bb.c + (- bb.b)' },
    ], ['a', 'b', 'c']],
    ['x := ready ? 0x1F : (n / 2)', [{ kind: 'assign', key: 'x', expr: 'bb.ready ? 31 : ( bb.n / 2 )' }], ['n', 'ready', 'x']],
    ['done := true;', [{ kind: 'assign', key: 'done', expr: 'true' }], ['done']],
  ])('%s', (src, statements, keys) => {
    const r = translateScript(src);
    expect(r).toEqual({ ok: true, statements, keys: new Set(keys) });
  });

  it.each([
    ["msg := 'hp ' .. hp", "Canopy expressions have no equivalent of the string concatenation '..'"],
    ['flags := flags | 4', "Canopy expressions have no equivalent of the bitwise operator '|'"],
    ['a := b := 1', 'only one assignment per statement is supported'],
    ["'x' := 1", "an assignment must start with a blackboard key name ('key := value')"],
    ["name := 'open", "the text starting at column 9 has no closing '"],
    ['a := #', "unexpected character '#' at column 6"],
    ['x :=', "nothing is assigned to 'x'"],
    ['  ;  ', 'the script is empty'],
  ])('refuses %s', (src, message) => {
    expect(translateScript(src)).toEqual({ ok: false, message: expect.stringContaining(message) });
  });
});
