// The watched agent (live or in a recording): time-travel scrubber, its tree coloured by the shown
// tick, its data, the why of that tick and its timeline.

import { useEffect, useRef, useState } from 'preact/hooks';
import { ControlBar } from './control';
import { TreeGraph } from './graph';
import { Blackboard, NodeActivity, Observation, Timeline, Waiting, Why } from './panels';
import { store, type State } from './store';
import type { AgentFrame } from './types';

function Scrubber({ frames, shown, live, recorded }: { frames: AgentFrame[]; shown: AgentFrame; live: boolean; recorded: boolean }) {
  const first = frames[0]?.tick ?? shown.tick;
  const last = frames.at(-1)?.tick ?? shown.tick;
  const at = frames.indexOf(shown);
  const step = (d: number): void => {
    const f = frames[Math.max(0, Math.min(frames.length - 1, at + d))];
    if (f !== undefined) store.seek(f.tick);
  };
  return (
    <div class="scrubber">
      <button type="button" title="Previous tick" onClick={() => step(-1)} disabled={at <= 0}>◀</button>
      <button type="button" title="Next tick" onClick={() => step(1)} disabled={live}>▶</button>
      <input
        type="range"
        min={0}
        max={Math.max(0, frames.length - 1)}
        value={at}
        aria-label="Time travel"
        onInput={(e) => {
          const i = Number((e.target as HTMLInputElement).value);
          const f = frames[i];
          store.seek(i === frames.length - 1 ? null : (f?.tick ?? null));
        }}
      />
      <span class="mono tickinfo">
        tick <b class="shown-tick">{shown.tick}</b> <span class="dim">({first}–{last}, t={shown.time.toFixed(2)}s)</span>
      </span>
      <button type="button" class={`live ${live ? 'on' : ''}`} onClick={() => store.seek(null)}>{recorded ? (live ? 'last tick' : 'to the last tick') : live ? '● live' : 'back to live'}</button>
    </div>
  );
}

export function AgentView({ s }: { s: State }) {
  const [picked, setPicked] = useState<number | null>(null);
  const [find, setFind] = useState('');
  const w = s.watching;
  const frame = store.frame();
  const live = s.cursor === null;
  // The why follows the shown tick: at once when stepping, at most twice a second while live.
  const lastAsk = useRef(0);
  useEffect(() => {
    if (frame === null) return;
    const wait = live ? Math.max(0, lastAsk.current + 500 - performance.now()) : 0;
    const t = setTimeout(() => {
      lastAsk.current = performance.now();
      store.askWhy(frame.tick);
    }, wait);
    return () => clearTimeout(t);
  }, [frame?.tick, live]);
  if (w === null) return <div class="placeholder">Pick an agent in the hierarchy to watch it: its tree, data, timeline and why appear here.</div>;
  const tree = w.tree;
  if (tree === null) return <div class="placeholder">Watching {w.label || `#${String(w.agent)}`}…</div>;
  // A what-if's divergence for this agent, outlined on its tree.
  const change = s.whatif?.report?.changes.find((c) => c.id === w.agent) ?? null;
  const marks = new Set<number>();
  if (change?.divergence != null) {
    const at = tree.nodes.findIndex((n) => n.path === change.divergence!.path);
    if (at >= 0) marks.add(at);
  }
  return (
    <div class="agent-view">
      <div class="agent-head">
        <h2 class="agent-label">{w.label || `#${String(w.agent)}`}</h2>
        <span class="mono dim">id {String(w.agent)}</span>
        <span class="badge">{tree.name}</span>
        <span class="mono dim" title="tree version">v {tree.version.slice(0, 10)}</span>
        <Legend />
      </div>
      {change !== null && (
        <div class="diverged">
          What-if: decisions change from tick <b>{change.firstTick}</b>
          {change.divergence !== null && (
            <>
              {' '}at <b>{change.divergence.names}</b> (recorded {change.divergence.recorded} → now {change.divergence.changed})
            </>
          )}
          {' '}· {change.ticksDiffering} {change.ticksDiffering === 1 ? 'tick differs' : 'ticks differ'}
          <button type="button" onClick={() => store.seek(change.firstTick)}>show tick {change.firstTick}</button>
        </div>
      )}
      {frame === null ? (
        <div class="placeholder">Waiting for the agent's next tick…</div>
      ) : (
        <>
          <Scrubber frames={s.frames} shown={frame} live={live} recorded={s.view === 'recordings'} />
          <ControlBar s={s} picked={picked} />
          <div class="graph-box">
            <input class="node-search" type="search" placeholder="Find a node" value={find} onInput={(e) => setFind((e.target as HTMLInputElement).value)} />
            <TreeGraph tree={tree} frame={frame.nodes} onPick={setPicked} picked={picked} marks={marks} find={find} />
          </div>
          <div class="panels">
            <section><h3>Blackboard</h3><Blackboard frame={frame} /></section>
            <section><h3>Observation <span class="dim">self</span></h3><Observation frame={frame} /></section>
            <section><h3>Waiting actions</h3><Waiting frame={frame} tree={tree} /></section>
            <section class="wide"><h3>Why <span class="dim">tick {s.why?.tick ?? frame.tick}{s.why !== null && s.why.tick !== frame.tick ? ' (updating…)' : ''}</span></h3><Why why={s.why} tree={tree} onPick={setPicked} /></section>
            <section class="wide"><h3>Timeline</h3><Timeline frames={s.frames} upTo={frame.tick} tree={tree} /></section>
            <section class="wide">
              <h3>Node activity <span class="dim">over {s.frames.filter((f) => f.tick <= frame.tick).length} ticks up to {frame.tick}</span></h3>
              <NodeActivity frames={s.frames} upTo={frame.tick} tree={tree} onPick={setPicked} />
            </section>
          </div>
        </>
      )}
    </div>
  );
}

function Legend() {
  return (
    <div class="legend-bar">
      <span class="sw running deepest" /> running (deepest) <span class="sw running" /> running path <span class="sw success" /> succeeded
      <span class="sw failure" /> failed <span class="sw idle" /> not reached <span class="sw faded-sw" /> not ticked
    </div>
  );
}

