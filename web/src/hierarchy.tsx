// The agents of the selected session as a tree of their labels split on `/` (agents without a label
// under their tree's name), collapsible, with counts; a search and a tree filter; the rows are
// virtualized, so 100,000 agents scroll as smoothly as ten.

import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { store, type Activity, type Agents } from './store';
import type { AgentId } from './types';

const ROW = 24;
/** Groups larger than this start collapsed (2,000 unlabelled agents would bury the labelled ones). */
const OPEN_UP_TO = 200;

interface Group {
  name: string;
  path: string;
  groups: Map<string, Group>;
  agents: number[];
  count: number;
}

type Row = { kind: 'group'; group: Group; depth: number } | { kind: 'agent'; index: number; name: string; depth: number };

function group(name: string, path: string): Group {
  return { name, path, groups: new Map(), agents: [], count: 0 };
}

/** Builds the label tree of the rows that pass `keep`. */
function build(agents: Agents, keep: (i: number) => boolean): Group {
  const root = group('', '');
  agents.rows.forEach(([, tree, label], i) => {
    if (!keep(i)) return;
    const parts = label.length > 0 ? label.split('/') : [agents.trees[tree] ?? '?', ''];
    let g = root;
    g.count++;
    for (let k = 0; k < parts.length - 1; k++) {
      const part = parts[k] ?? '';
      let next = g.groups.get(part);
      if (next === undefined) {
        next = group(part, `${g.path}/${part}`);
        g.groups.set(part, next);
      }
      g = next;
      g.count++;
    }
    g.agents.push(i);
  });
  return root;
}

/** A group is open by default when small; clicking toggles from its default. */
const isOpen = (g: Group, toggled: Set<string>, all: boolean): boolean => all || (g.count <= OPEN_UP_TO) !== toggled.has(g.path);

function flatten(root: Group, agents: Agents, collapsed: Set<string>, all: boolean): Row[] {
  const out: Row[] = [];
  const walk = (g: Group, depth: number): void => {
    for (const child of [...g.groups.values()].toSorted((a, b) => a.name.localeCompare(b.name))) {
      out.push({ kind: 'group', group: child, depth });
      if (isOpen(child, collapsed, all)) walk(child, depth + 1);
    }
    for (const i of g.agents) {
      const row = agents.rows[i];
      if (row === undefined) continue;
      const label = row[2];
      const name = label.length > 0 ? (label.split('/').at(-1) ?? label) : '';
      out.push({ kind: 'agent', index: i, name, depth });
    }
  };
  walk(root, 0);
  return out;
}

/** Does an agent's activity pass the filter (`''` any, `error`, `success`, `failure`, `action:NAME`)? */
function passes(filter: string, a: Activity['byId'] extends Map<AgentId, infer V> ? V | undefined : never): boolean {
  if (filter === '') return true;
  if (a === undefined) return false;
  if (filter === 'error') return a.error !== null;
  if (filter === 'success' || filter === 'failure') return a.done === filter;
  return filter.startsWith('action:') && a.action === filter.slice(7) && a.done === null;
}

export function Hierarchy({ agents, watching, activity }: { agents: Agents | null; watching: AgentId | null; activity?: Activity | null }) {
  const [query, setQuery] = useState('');
  const [tree, setTree] = useState('');
  const [doing, setDoing] = useState('');
  // While a filter on activity is on, the page asks for it every 2 s (the service keeps it only while shown).
  useEffect(() => {
    if (activity !== undefined && agents !== null) store.send({ t: 'activity' });
  }, [agents?.session]);
  useEffect(() => {
    if (doing === '' || activity === undefined) return;
    store.send({ t: 'activity' });
    const t = setInterval(() => store.send({ t: 'activity' }), 2000);
    return () => clearInterval(t);
  }, [doing, agents?.session]);
  const [collapsed, setCollapsed] = useState<Set<string>>(new Set());
  const [scroll, setScroll] = useState(0);
  const box = useRef<HTMLDivElement>(null);
  const root = useMemo(() => {
    if (agents === null) return null;
    const q = query.trim().toLowerCase();
    const t = tree === '' ? -1 : agents.trees.indexOf(tree);
    return build(agents, (i) => {
      const row = agents.rows[i];
      if (row === undefined) return false;
      if (t >= 0 && row[1] !== t) return false;
      if (doing !== '' && !passes(doing, activity?.byId.get(row[0]))) return false;
      return q === '' || String(row[0]).toLowerCase().includes(q) || row[2].toLowerCase().includes(q);
    });
  }, [agents, query, tree, doing, activity]);
  const rows = useMemo(() => (root === null || agents === null ? [] : flatten(root, agents, collapsed, query.trim() !== '')), [root, agents, collapsed, query]);
  if (agents === null) return <div class="empty">Pick a session.</div>;
  const height = box.current?.clientHeight ?? 600;
  const first = Math.max(0, Math.floor(scroll / ROW) - 10);
  const last = Math.min(rows.length, Math.ceil((scroll + height) / ROW) + 10);
  const toggle = (path: string): void => {
    const next = new Set(collapsed);
    if (next.has(path)) next.delete(path);
    else next.add(path);
    setCollapsed(next);
  };
  return (
    <div class="hierarchy">
      <div class="filters">
        <input type="search" placeholder="Search id or label" value={query} onInput={(e) => setQuery((e.target as HTMLInputElement).value)} />
        <select value={tree} onChange={(e) => setTree((e.target as HTMLSelectElement).value)} title="Filter by tree">
          <option value="">all trees</option>
          {agents.trees.map((t) => (
            <option value={t} key={t}>{t}</option>
          ))}
        </select>
      </div>
      {activity !== undefined && (
        <select class="doing" value={doing} onFocus={() => store.send({ t: 'activity' })} onChange={(e) => setDoing((e.target as HTMLSelectElement).value)} title="Filter by what the agent last decided">
          <option value="">any activity</option>
          <option value="error">with an error</option>
          <option value="success">tree finished: success</option>
          <option value="failure">tree finished: failure</option>
          {(activity?.actions ?? []).map((a) => (
            <option value={`action:${a}`} key={a}>doing: {a}</option>
          ))}
        </select>
      )}
      <div class="count">{root?.count.toLocaleString() ?? 0} of {agents.rows.length.toLocaleString()} agents</div>
      <div class="rows" ref={box} onScroll={(e) => setScroll((e.target as HTMLDivElement).scrollTop)}>
        <div style={{ height: `${rows.length * ROW}px`, position: 'relative' }}>
          {rows.slice(first, last).map((r, k) => {
            const top = (first + k) * ROW;
            const pad = 8 + r.depth * 14;
            if (r.kind === 'group') {
              const open = isOpen(r.group, collapsed, query.trim() !== '');
              return (
                <div class="row group" style={{ top: `${top}px`, paddingLeft: `${pad}px` }} key={r.group.path} onClick={() => toggle(r.group.path)}>
                  <span class="caret">{open ? '▾' : '▸'}</span>
                  <span class="gname">{r.group.name}</span>
                  <span class="gcount">{r.group.count.toLocaleString()}</span>
                </div>
              );
            }
            const row = agents.rows[r.index];
            if (row === undefined) return null;
            const [id, t, label] = row;
            return (
              <div
                class={`row agent ${id === watching ? 'selected' : ''}`}
                style={{ top: `${top}px`, paddingLeft: `${pad + 12}px` }}
                key={`a${String(id)}`}
                title={label}
                onClick={() => store.watch(id, label)}
              >
                <span class="aname">{r.name === '' ? `#${String(id)}` : r.name}</span>
                <span class="aid mono">{r.name === '' ? agents.trees[t] : `#${String(id)}`}</span>
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}
