// Test helpers: import XML snippets and tick the trees they hold, collecting decisions per tick.

import { readFileSync } from 'node:fs';
import { Agent, DecisionBuffer, NodeCatalog, type CompiledTree } from '../../src/bt/index.js';
import { formatInteropError, importXml, type ImportedTrees, type InteropError } from '../../src/interop/index.js';

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
