// A tree drawn top-down with d3-hierarchy's tidy-tree layout, coloured by a frame of the watched
// agent as seed 004 defines it: blue running (the deepest running node darkest), green succeeded,
// red failed, grey not reached; nodes not ticked this tick faded with their last status; halts
// dashed, aborts marked. Without a frame (the trees view) every node is drawn neutral.

import { hierarchy, tree as tidy, type HierarchyPointNode } from 'd3-hierarchy';
import { useMemo, useState } from 'preact/hooks';
import type { NodeFrame, TreeNode, TreeView } from './types';

const W = 168;
const H = 74;
const GAP_X = 18;
const GAP_Y = 34;

interface Item {
  index: number;
  node: TreeNode;
}

/** The colour class of one node in one frame. */
export function colourOf(frame: NodeFrame | undefined, deepest: boolean): string {
  if (frame === undefined) return 'plain';
  switch (frame.status) {
    case 'running':
      return deepest ? 'running deepest' : 'running';
    case 'success':
      return 'success';
    case 'failure':
      return 'failure';
    default:
      return 'idle';
  }
}

/** Characters of a detail line that fit in a box. */
const LINE = 25;
const clip = (s: string): string => (s.length > LINE ? `${s.slice(0, LINE - 1)}…` : s);
const short = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v)));

/** The lines under a node's title: guard, key parameters, services, decorator state. */
function details(node: TreeNode, frame: NodeFrame | undefined): string[] {
  const out: string[] = [];
  if (node.action !== undefined) {
    const args = node.params?.args;
    const list = args !== null && typeof args === 'object' ? Object.entries(args).map(([k, v]) => `${k}: ${short(v)}`).join(', ') : '';
    out.push(`⇢ ${node.action}(${list})`);
  }
  if (node.guard !== undefined) out.push(`if ${short(node.guard.if)} · ${node.guard.abort}`);
  const p = node.params ?? {};
  for (const [k, v] of Object.entries(p)) {
    if (k === 'action' || k === 'args' || k === 'children' || k === 'child') continue;
    out.push(`${k}: ${short(v)}`);
    if (out.length >= 2) break;
  }
  if (node.services !== undefined && node.services.length > 0) out.push(`⟳ ${node.services.map((s) => `${s.service ?? 'values'}/${s.every}s`).join(', ')}`);
  if (frame?.state !== undefined) out.push(Object.entries(frame.state).map(([k, v]) => `${k} ${Number.isInteger(v) ? v : v.toFixed(2)}`).join(' · '));
  return out.slice(0, 3).map(clip);
}

export function TreeGraph({ tree, frame, marks, onPick, picked, find }: {
  tree: TreeView;
  frame?: NodeFrame[] | undefined;
  /** Nodes to outline (e.g. a what-if's divergences). */
  marks?: ReadonlySet<number>;
  onPick?: (index: number) => void;
  picked?: number | null;
  /** Text to find: nodes whose name, type, action or guard contain it are highlighted. */
  find?: string;
}) {
  const [collapsed, setCollapsed] = useState<Set<number>>(new Set());
  const layout = useMemo(() => {
    const root = hierarchy<Item>({ index: 0, node: tree.nodes[0]! }, (d) =>
      collapsed.has(d.index) ? [] : d.node.children.map((c) => ({ index: c, node: tree.nodes[c]! })),
    );
    return tidy<Item>().nodeSize([W + GAP_X, H + GAP_Y])(root);
  }, [tree, collapsed]);
  const nodes = layout.descendants();
  const minX = Math.min(...nodes.map((n) => n.x)) - W / 2 - 10;
  const maxX = Math.max(...nodes.map((n) => n.x)) + W / 2 + 10;
  const maxY = Math.max(...nodes.map((n) => n.y)) + H + 10;
  const needle = (find ?? '').trim().toLowerCase();
  const found = (n: TreeNode): boolean =>
    needle !== '' && [n.name, n.type, n.action, n.guard?.if].some((t) => t != null && t.toLowerCase().includes(needle));
  const running = (i: number): boolean => frame?.[i]?.status === 'running';
  const deepest = (i: number): boolean => running(i) && !tree.nodes[i]!.children.some(running);
  const link = (l: { source: HierarchyPointNode<Item>; target: HierarchyPointNode<Item> }) => {
    const y1 = l.source.y + H;
    const y2 = l.target.y;
    const ym = (y1 + y2) / 2;
    return `M${l.source.x},${y1} V${ym} H${l.target.x} V${y2}`;
  };
  return (
    <svg class="graph" width={maxX - minX} height={maxY + 10} viewBox={`${minX} -10 ${maxX - minX} ${maxY + 10}`}>
      {layout.links().map((l) => {
        const f = frame?.[l.target.data.index];
        const hot = f !== undefined && f.ticked && f.status !== 'idle';
        return <path key={`${l.source.data.index}-${l.target.data.index}`} class={`link ${hot ? `hot ${f.status}` : ''}`} d={link(l)} />;
      })}
      {nodes.map((n) => {
        const { index, node } = n.data;
        const f = frame?.[index];
        const cls = [
          'node',
          colourOf(f, deepest(index)),
          f !== undefined && !f.ticked ? 'faded' : '',
          f?.halted === true ? 'halted' : '',
          f?.aborted === true ? 'aborted' : '',
          f?.forced === true ? 'forced' : '',
          marks?.has(index) === true ? 'marked' : '',
          picked === index ? 'picked' : '',
          found(node) ? 'found' : '',
        ].join(' ');
        const title = node.name ?? node.action ?? node.type;
        const kind = node.name !== null || node.action !== undefined ? node.type : '';
        const lines = details(node, f);
        const hidden = collapsed.has(index) ? node.children.length : 0;
        return (
          <g class={cls} key={index} transform={`translate(${n.x - W / 2},${n.y})`} data-node={index} onClick={() => onPick?.(index)}>
            <title>{`${node.path}${f !== undefined ? ` — ${f.status}${f.ticked ? '' : ' (not ticked this tick)'}${f.halted ? ', halted' : ''}${f.aborted ? ', aborted' : ''}${f.forced === true ? ', forced by the inspector' : ''}` : ''}`}</title>
            <rect class="box" width={W} height={H} rx={7} />
            <text class="title" x={10} y={18}>{title}</text>
            {kind !== '' && <text class="kind" x={W - 8} y={18} text-anchor="end">{kind}</text>}
            {lines.map((line, k) => (
              <text class="detail" x={10} y={33 + k * 12} key={k}>{line}</text>
            ))}
            {marks?.has(index) === true && <text class="diverge" x={10} y={H - 5}>◆ diverged</text>}
            {f?.aborted === true && <text class="flag" x={W - 8} y={H - 5} text-anchor="end">⚡ abort</text>}
            {f?.halted === true && f.aborted !== true && <text class="flag" x={W - 8} y={H - 5} text-anchor="end">halted</text>}
            {f?.guard !== undefined && <circle class={`guard ${f.guard ? 'yes' : 'no'}`} cx={W - 4} cy={4} r={5}><title>{`guard ${f.guard}`}</title></circle>}
            {node.children.length > 0 && (
              <text
                class="fold"
                x={W / 2}
                y={H + 12}
                text-anchor="middle"
                onClick={(e) => {
                  e.stopPropagation();
                  const next = new Set(collapsed);
                  if (next.has(index)) next.delete(index);
                  else next.add(index);
                  setCollapsed(next);
                }}
              >
                {hidden > 0 ? `+${hidden}` : '−'}
              </text>
            )}
          </g>
        );
      })}
    </svg>
  );
}
