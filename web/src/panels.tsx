// The watched agent's data at the shown tick: blackboard (this tick's changes highlighted), the
// observation row, waiting actions, running nodes, the timeline of events and the why panel.

import type { AgentFrame, TreeView, WhyCheck, WhyReport, WhyTerm } from './types';

export const show = (v: unknown): string => {
  if (v === undefined) return 'undefined';
  if (typeof v === 'string') return JSON.stringify(v);
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s;
};

const nodeName = (tree: TreeView, i: number): string => {
  const n = tree.nodes[i];
  return n === undefined ? `#${i}` : (n.name ?? n.action ?? n.type);
};

function Table({ data, changed }: { data: Record<string, unknown>; changed?: readonly string[] }) {
  const keys = Object.keys(data);
  if (keys.length === 0) return <div class="empty">empty</div>;
  return (
    <table class="kv">
      <tbody>
        {keys.map((k) => (
          <tr key={k} class={changed?.includes(k) === true ? 'changed' : ''}>
            <th>{k}</th>
            <td class="mono">{show(data[k])}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function Blackboard({ frame }: { frame: AgentFrame }) {
  return <Table data={frame.bb} changed={frame.changed} />;
}

export function Observation({ frame }: { frame: AgentFrame }) {
  const self = frame.self;
  if (self === null || typeof self !== 'object') return <div class="empty">no observation</div>;
  return <Table data={self as Record<string, unknown>} />;
}

export function Waiting({ frame, tree }: { frame: AgentFrame; tree: TreeView }) {
  const running = frame.nodes.flatMap((n, i) => (n.status === 'running' && n.ticked ? [i] : []));
  return (
    <div>
      {frame.waiting.length === 0 ? (
        <div class="empty">no action waiting</div>
      ) : (
        <table class="kv">
          <tbody>
            {frame.waiting.map((w) => (
              <tr key={w.seq}>
                <th class="mono">seq {w.seq}</th>
                <td>{w.action} <span class="dim">at {nodeName(tree, w.node)} · {frame.tick - w.since} ticks</span></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div class="sub">Running nodes</div>
      <div class="chips">{running.length === 0 ? <span class="dim">none</span> : running.map((i) => <span class="chip running" key={i}>{nodeName(tree, i)}</span>)}</div>
    </div>
  );
}

/** Decisions, cancels, results, completions, errors, logs and aborts of the frames up to the shown tick, newest first. */
export function Timeline({ frames, upTo, tree }: { frames: AgentFrame[]; upTo: number; tree: TreeView }) {
  const rows: Array<{ tick: number; kind: string; text: string }> = [];
  for (let k = frames.length - 1; k >= 0 && rows.length < 200; k--) {
    const f = frames[k]!;
    if (f.tick > upTo) continue;
    for (let e = f.events.length - 1; e >= 0; e--) {
      const ev = f.events[e]!;
      let text: string;
      switch (ev.kind) {
        case 'action': text = `${ev.action} seq ${ev.seq} ${show(ev.args)} (${nodeName(tree, ev.node)})`; break;
        case 'cancel': text = `cancel seq ${ev.seq} (${nodeName(tree, ev.node)})`; break;
        case 'result': text = `result seq ${ev.seq}: ${ev.status}`; break;
        case 'done': text = `tree finished: ${ev.status}`; break;
        case 'error': text = `${ev.code}: ${ev.message}`; break;
        case 'log': text = `[${ev.level}] ${ev.message} (${nodeName(tree, ev.node)})`; break;
        case 'abort': text = `${nodeName(tree, ev.node)} aborted (${ev.mode})`; break;
      }
      rows.push({ tick: f.tick, kind: ev.kind, text });
    }
  }
  if (rows.length === 0) return <div class="empty">nothing happened yet</div>;
  return (
    <div class="timeline">
      {rows.map((r, k) => (
        <div class={`event ${r.kind}`} key={k}>
          <span class="mono tick">{r.tick}</span>
          <span class={`ekind ${r.kind}`}>{r.kind}</span>
          <span class="etext">{r.text}</span>
        </div>
      ))}
    </div>
  );
}

/** `self.hp < 30` with each direct sub-expression replaced by its value: `42 < 30`. */
export function substitute(term: WhyTerm): string | null {
  if (term.children.length === 0) return null;
  let text = term.text;
  let from = 0;
  for (const c of term.children) {
    const at = text.indexOf(c.text, from);
    if (at < 0) return null;
    const v = c.skipped === true ? '…' : show(c.value);
    text = text.slice(0, at) + v + text.slice(at + c.text.length);
    from = at + v.length;
  }
  return text === term.text ? null : text;
}

function Term({ term, depth }: { term: WhyTerm; depth: number }) {
  if (term.children.length === 0 || depth > 4) return null;
  return (
    <ul class="terms">
      {term.children.map((c, k) => (
        <li key={k} class={c.skipped === true ? 'skipped' : ''}>
          <span class="mono">{c.text}</span> = <span class="mono val">{c.skipped === true ? 'not evaluated' : show(c.value)}</span>
          <Term term={c} depth={depth + 1} />
        </li>
      ))}
    </ul>
  );
}

export function Why({ why, tree, onPick }: { why: { tick: number; report: WhyReport | null } | null; tree: TreeView; onPick: (node: number) => void }) {
  if (why === null) return <div class="empty">working…</div>;
  if (why.report === null) return <div class="empty">tick {why.tick} is no longer in the agent's recent past</div>;
  if (why.report.checks.length === 0) return <div class="empty">no guard or condition was evaluated at tick {why.tick}</div>;
  // A guard checked twice in one tick (its abort re-check, then the visit) with the same value shows once.
  const seen = new Map<string, { check: WhyCheck; times: number }>();
  for (const c of why.report.checks) {
    const key = `${c.node}|${c.kind}|${c.source}|${show(c.value)}`;
    const had = seen.get(key);
    if (had === undefined) seen.set(key, { check: c, times: 1 });
    else had.times++;
  }
  return (
    <div class="why">
      {[...seen.values()].map(({ check: c, times }, k) => {
        const mid = substitute(c.term);
        return (
          <div class={`check ${c.value === true ? 'yes' : c.value === false ? 'no' : ''}`} key={k} onClick={() => onPick(c.node)}>
            <div class="check-head">
              <span class={`ckind ${c.kind}`}>{c.kind}</span>
              <span class="cnode">{nodeName(tree, c.node)}</span>
              <span class="dim mono">{c.path}</span>
              {times > 1 && <span class="count">evaluated {times}×</span>}
            </div>
            <div class="mono chain">
              <span>{c.source}</span>
              {mid !== null && <span> → {mid}</span>}
              <span> → </span>
              <b class="val">{show(c.value)}</b>
            </div>
            <details>
              <summary>sub-expressions</summary>
              <Term term={c.term} depth={0} />
            </details>
          </div>
        );
      })}
    </div>
  );
}

/** Per node over the frames up to the shown tick: visits, and how often it ended running, succeeded or failed. */
export function NodeActivity({ frames, upTo, tree, onPick }: { frames: AgentFrame[]; upTo: number; tree: TreeView; onPick: (node: number) => void }) {
  const shown = frames.filter((f) => f.tick <= upTo);
  const n = tree.nodes.length;
  const visits = Array.from({ length: n }, () => 0);
  const running = Array.from({ length: n }, () => 0);
  const success = Array.from({ length: n }, () => 0);
  const failure = Array.from({ length: n }, () => 0);
  for (const f of shown) {
    for (let i = 0; i < n; i++) {
      const nf = f.nodes[i];
      if (nf === undefined || !nf.ticked) continue;
      visits[i]!++;
      if (nf.status === 'running') running[i]!++;
      else if (nf.status === 'success') success[i]!++;
      else if (nf.status === 'failure') failure[i]!++;
    }
  }
  const rows = tree.nodes.map((_, i) => i).filter((i) => visits[i]! > 0).toSorted((a, b) => running[b]! - running[a]! || visits[b]! - visits[a]!);
  if (rows.length === 0) return <div class="empty">no node ticked yet</div>;
  return (
    <table class="kv activity">
      <thead>
        <tr><th>node</th><td>ticked</td><td>running</td><td>success</td><td>failure</td></tr>
      </thead>
      <tbody>
        {rows.map((i) => (
          <tr key={i} onClick={() => onPick(i)}>
            <th>{nodeName(tree, i)}</th>
            <td class="mono">{visits[i]}</td>
            <td class="mono">
              {running[i]} <span class="bar"><i style={{ width: `${(100 * running[i]!) / Math.max(1, shown.length)}%` }} /></span>
            </td>
            <td class="mono ok">{success[i]}</td>
            <td class="mono bad">{failure[i]}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
