// The designer's loop through Groot2: Groot2 rewrites a file with every declared port on every node (empty when
// unset) and its own `_uid`s; such a file must import to exactly the trees Canopy exported.

import { describe, expect, it } from 'vitest';
import { TreeLibrary } from '../../src/bt/index.js';
import { exportXml, formatInteropError, importXml } from '../../src/interop/index.js';
import { asGroot2Saves } from './drive.js';

const TREES = new URL('../../trees/', import.meta.url).pathname;

describe('a Canopy export saved again by Groot2', () => {
  it('imports to the same trees as the export itself', async () => {
    const loaded = await TreeLibrary.loadFolder(TREES);
    if (!loaded.ok) throw new Error('the bundled trees do not load');
    const defs = Object.fromEntries(loaded.library.names().map((n) => [n, loaded.library.definition(n)!]));
    const xml = exportXml(defs);
    const saved = asGroot2Saves(xml);
    expect(saved).toContain('canopy_timeout=""');
    expect(saved).toContain('_uid="1"');
    const direct = importXml(xml, { file: 'export.xml' });
    const viaGroot = importXml(saved, { file: 'saved.xml' });
    if (!viaGroot.ok) throw new Error(viaGroot.errors.map(formatInteropError).join('\n'));
    expect(direct.ok && viaGroot.trees).toEqual(direct.ok && direct.trees);
  });
});

describe('the CanopyTree node: a tree\'s blackboard and description, editable in Groot2', () => {
  const text = (header: string, inner = '<AlwaysSuccess/>'): string =>
    `<root BTCPP_format="4">\n  <BehaviorTree ID="T">\n    ${header}${inner}</CanopyTree>\n  </BehaviorTree>\n</root>`;

  it('initial values edited in Groot2 come back', () => {
    const r = importXml(text('<CanopyTree blackboard="{&quot;ammo&quot;: 12, &quot;mode&quot;: &quot;calm&quot;}" description="edited">', '<Script code="ammo := ammo - 1"/>'));
    expect(r.ok && r.trees['T']).toEqual({ description: 'edited', blackboard: { ammo: 12, mode: 'calm' }, root: { type: 'set', values: { ammo: 'bb.ammo - 1' } } });
  });

  it('is refused with advice when its blackboard is not a JSON object, or when it is not directly under <BehaviorTree>', () => {
    const bad = importXml(text('<CanopyTree blackboard="[1]">'), { file: 'b.xml' });
    expect(bad.ok || bad.errors.map(formatInteropError)).toEqual([
      'b.xml:3:5: <CanopyTree>: \'blackboard\' must be a JSON object of key → initial value, like {"ammo": 10} [E_XML_SHAPE]',
    ]);
    const nested = importXml('<root BTCPP_format="4"><BehaviorTree ID="T"><Inverter><CanopyTree><AlwaysSuccess/></CanopyTree></Inverter></BehaviorTree></root>', { file: 'n.xml' });
    expect(nested.ok || nested.errors.map(formatInteropError)).toEqual([
      'n.xml:1:55: <CanopyTree>: CanopyTree carries a tree\'s blackboard and description; keep it directly under <BehaviorTree>, around the root node [E_XML_SHAPE]',
    ]);
  });
});
