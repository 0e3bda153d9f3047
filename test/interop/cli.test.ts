// runConvert (behind `canopy convert`): real files in a temporary folder, both directions, exit codes and messages.

import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { TreeLibrary } from '../../src/bt/index.js';
import { runConvert, type ConvertArgs } from '../../src/interop/index.js';

const TREES = new URL('../../trees/', import.meta.url).pathname;
const FIXTURES = new URL('./fixtures/', import.meta.url).pathname;

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'canopy-convert-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs the conversion capturing stdout and stderr. */
async function convert(args: Omit<ConvertArgs, 'stdout' | 'stderr'>): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runConvert({ ...args, stdout: (t) => (out += t), stderr: (t) => (err += t) });
  return { code, out, err };
}

describe('canopy convert', () => {
  it('--to xml of a tree file takes its subtrees along; --to canopy writes them back as tree files that load', async () => {
    const xmlFile = join(dir, 'squad.xml');
    expect(await convert({ input: join(TREES, 'squad.yaml'), output: xmlFile, to: 'xml' })).toEqual({ code: 0, out: '', err: '' });
    const xml = await readFile(xmlFile, 'utf8');
    expect(xml).toContain('<root BTCPP_format="4" main_tree_to_execute="squad">');
    expect(xml).toContain('<BehaviorTree ID="take-cover"');
    expect(xml).not.toContain('<BehaviorTree ID="guard"');

    const back = join(dir, 'back');
    const r = await convert({ input: xmlFile, output: back, to: 'canopy', format: 'yaml' });
    expect(r).toEqual({ code: 0, out: `wrote 2 trees to ${back}: squad, take-cover\n`, err: '' });
    expect((await readdir(back)).toSorted()).toEqual(['squad.yaml', 'take-cover.yaml']);
    const loaded = await TreeLibrary.loadFolder(back);
    expect(loaded.ok).toBe(true);
    const original = await TreeLibrary.loadFolder(TREES);
    if (!loaded.ok || !original.ok) return;
    expect(parse(await readFile(join(back, 'squad.yaml'), 'utf8'))).toMatchObject({ blackboard: original.library.definition('squad')!.blackboard });
  });

  it('--to xml of a folder writes every tree, to stdout without --output', async () => {
    const r = await convert({ input: TREES, to: 'xml' });
    expect(r.code).toBe(0);
    for (const name of ['follower', 'guard', 'squad', 'take-cover']) expect(r.out).toContain(`<BehaviorTree ID="${name}"`);
  });

  it('--to canopy of a one-tree file prints the tree (JSON by default) or writes the named file', async () => {
    const one = join(dir, 'one.xml');
    await writeFile(one, '<root BTCPP_format="4"><BehaviorTree ID="Idle"><Sleep msec="250"/></BehaviorTree></root>');
    const r = await convert({ input: one, to: 'canopy' });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual({ blackboard: {}, root: { type: 'wait', seconds: 0.25 } });
    expect((await convert({ input: one, output: join(dir, 'idle.yaml'), to: 'canopy' })).code).toBe(0);
    expect(parse(await readFile(join(dir, 'idle.yaml'), 'utf8'))).toEqual({ blackboard: {}, root: { type: 'wait', seconds: 0.25 } });
  });

  it('includes are read relative to the file', async () => {
    const r = await convert({ input: join(FIXTURES, 'warehouse-robot.xml'), output: join(dir, 'robot'), to: 'canopy' });
    expect(r.code).toBe(0);
    expect((await readdir(join(dir, 'robot'))).toSorted()).toEqual(['Deliver.json', 'Dock.json', 'Main.json']);
  });

  it('exit 1 with file:line:column errors for a bad file; exit 2 for usage and I/O problems', async () => {
    const bad = join(dir, 'bad.xml');
    await writeFile(bad, '<root BTCPP_format="4">\n  <BehaviorTree ID="T">\n    <SequenceWithMemory><AlwaysSuccess/></SequenceWithMemory>\n  </BehaviorTree>\n</root>\n');
    const r = await convert({ input: bad, to: 'canopy' });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(new RegExp(`^${bad.replaceAll('/', '\\/')}:3:5: <SequenceWithMemory>: .* \\[E_XML_UNSUPPORTED\\]\\n$`));
    const several = await convert({ input: join(FIXTURES, 'warehouse-robot.xml'), to: 'canopy' });
    expect(several).toMatchObject({ code: 2, out: '' });
    expect(several.err).toContain('holds 3 trees (Dock, Main, Deliver); give --output <folder>');
    expect((await convert({ input: join(dir, 'missing.xml'), to: 'canopy' })).code).toBe(2);
  });

  it('exit 1 with the engine\'s errors when a tree to export is invalid', async () => {
    const broken = join(dir, 'broken.json');
    await writeFile(broken, JSON.stringify({ root: { type: 'sequnce', children: [] } }));
    const r = await convert({ input: broken, to: 'xml' });
    expect(r.code).toBe(1);
    expect(r.err).toContain("unknown node type 'sequnce' (did you mean 'sequence'?) [E_NODE_UNKNOWN_TYPE]");
  });
});
