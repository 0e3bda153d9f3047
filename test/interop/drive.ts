// Test helpers: import XML snippets and tick the trees they hold, collecting decisions per tick.

import { readFileSync } from 'node:fs';
import { Agent, DecisionBuffer, NodeCatalog, type CompiledTree } from '../../src/bt/index.js';
import { formatInteropError, importXml, type ImportedTrees, type InteropError } from '../../src/interop/index.js';
import { readXml, type XmlElement } from '../../src/interop/xml.js';

/** `<root BTCPP_format="4">…</root>` around tree elements. */
export function doc(body: string): string {
  return `<?xml version="1.0"?>\n<root BTCPP_format="4">\n${body}\n</root>\n`;
}

/** Imports text that must import cleanly (the errors are the failure message otherwise). */
export function imported(text: string, catalog?: NodeCatalog, file = 'test.xml'): ImportedTrees {
  const r = importXml(text, { file, ...(catalog ? { catalog } : {}), readFile: (p) => readFileSync(p, 'utf8') });
  if (!r.ok) throw new Error(r.errors.map(formatInteropError).join('\n'));
  return r;
}

/** Imports text that must fail; returns its errors formatted `file:line:column: message [CODE]`. */
export function importErrors(text: string, catalog?: NodeCatalog): string[] {
  const r = importXml(text, { file: 'bad.xml', ...(catalog ? { catalog } : {}) });
  if (r.ok) throw new Error('expected the import to fail');
  return r.errors.map((e: InteropError) => formatInteropError(e));
}

/** One agent on a compiled tree: tick with blackboard values and action results, read decisions. */
export class Driver {
  readonly agent: Agent;
  readonly out = new DecisionBuffer(true);
  private tickNo = 0;
  /** seq → action name of actions still running. */
  readonly running = new Map<number, string>();

  constructor(tree: CompiledTree, seed = 1) {
    this.agent = new Agent(tree, 'a', { seed });
  }

  /** Sets blackboard keys, delivers results (`{ Act: true }` = success for the running action named Act), ticks once. */
  tick(bb: Record<string, unknown> = {}, results: Record<string, boolean> = {}, period = 0.1): { issued: string[]; cancelled: string[]; done: string | undefined } {
    Object.assign(this.agent.bb, bb);
    for (const [seq, name] of this.running) {
      if (results[name] !== undefined && this.agent.deliverResult(seq, results[name])) this.running.delete(seq);
    }
    this.out.clear();
    this.agent.tick(this.tickNo * period, period, this.out);
    this.tickNo++;
    const issued = this.out.actions.map(([, seq, name]) => {
      this.running.set(seq, name);
      return name;
    });
    const cancelled = this.out.cancels.map(([, seq]) => {
      const name = this.running.get(seq) ?? `#${seq}`;
      this.running.delete(seq);
      return name;
    });
    // Instant or finished actions are not running any more.
    for (const seq of this.running.keys()) if (!this.agent.inspect().actions.some((a) => a.seq === seq)) this.running.delete(seq);
    return { issued, cancelled, done: this.out.done[0]?.[1] };
  }
}

/** Re-serialises a document the way Groot2 saves it: every model port on every node, `_uid`s, another indentation. */
export function asGroot2Saves(xml: string): string {
  const parsed = readXml(xml);
  if (!parsed.ok) throw new Error(parsed.message);
  const root = parsed.elements[0]!;
  const ports = new Map<string, string[]>();
  for (const m of root.children.find((c) => c.tag === 'TreeNodesModel')?.children ?? []) {
    ports.set(m.attrs['ID']!, m.children.map((p) => p.attrs['name']!));
  }
  let uid = 0;
  const esc = (v: string): string => v.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('"', '&quot;').replaceAll('\n', '&#10;');
  const write = (el: XmlElement, depth: number, inTree: boolean): string => {
    const attrs: Record<string, string> = { ...el.attrs };
    if (inTree) {
      const id = el.tag === 'SubTree' ? el.attrs['ID']! : el.tag;
      for (const p of ports.get(id) ?? []) attrs[p] ??= '';
      attrs['_uid'] = String(++uid);
    }
    const a = Object.entries(attrs).map(([k, v]) => ` ${k}="${esc(v)}"`).join('');
    const pad = '    '.repeat(depth);
    const inner = el.children.map((c) => write(c, depth + 1, inTree || el.tag === 'BehaviorTree'));
    const text = el.text === '' ? '' : esc(el.text);
    if (inner.length === 0 && text === '') return `${pad}<${el.tag}${a}/>`;
    if (inner.length === 0) return `${pad}<${el.tag}${a}>${text}</${el.tag}>`;
    return `${pad}<${el.tag}${a}>\n${inner.join('\n')}\n${pad}</${el.tag}>`;
  };
  return `<?xml version="1.0" encoding="UTF-8"?>\n${write(root, 0, false)}\n`;
}
