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
