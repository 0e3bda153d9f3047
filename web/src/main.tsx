// The inspector page: sessions and agents on the left; the watched agent's tree, time-travel
// scrubber, data, timeline and why on the right; a view of every loaded tree.

import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { TreeGraph } from './graph';
import { Hierarchy } from './hierarchy';
import { Blackboard, Observation, Timeline, Waiting, Why } from './panels';
import { Sessions } from './sessions';
import { store, useStore, type State } from './store';
// oxlint-disable-next-line import/no-unassigned-import -- the page's stylesheet
import './style.css';
import type { AgentFrame } from './types';

function Scrubber({ frames, shown, live }: { frames: AgentFrame[]; shown: AgentFrame; live: boolean }) {
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
      <button type="button" class={`live ${live ? 'on' : ''}`} onClick={() => store.seek(null)}>{live ? '● live' : 'back to live'}</button>
    </div>
  );
}

function AgentView({ s }: { s: State }) {
  const [picked, setPicked] = useState<number | null>(null);
  const w = s.watching;
  const frame = store.frame();
  const live = s.cursor === null;
  // The why follows the shown tick; when live, it is asked for when the page stops on a tick (≤ 2/s).
  useEffect(() => {
    if (frame === null) return;
    const t = setTimeout(() => store.askWhy(frame.tick), live ? 500 : 0);
    return () => clearTimeout(t);
  }, [frame?.tick, live]);
  if (w === null) return <div class="placeholder">Pick an agent in the hierarchy to watch it: its tree, data, timeline and why appear here.</div>;
  const tree = w.tree;
  if (tree === null) return <div class="placeholder">Watching {w.label || `#${String(w.agent)}`}…</div>;
  return (
    <div class="agent-view">
      <div class="agent-head">
        <h2 class="agent-label">{w.label || `#${String(w.agent)}`}</h2>
        <span class="mono dim">id {String(w.agent)}</span>
        <span class="badge">{tree.name}</span>
        <span class="mono dim" title="tree version">v {tree.version.slice(0, 10)}</span>
        <Legend />
      </div>
      {frame === null ? (
        <div class="placeholder">Waiting for the agent's next tick…</div>
      ) : (
        <>
          <Scrubber frames={s.frames} shown={frame} live={live} />
          <div class="graph-box">
            <TreeGraph tree={tree} frame={frame.nodes} onPick={setPicked} picked={picked} />
          </div>
          <div class="panels">
            <section><h3>Blackboard</h3><Blackboard frame={frame} /></section>
            <section><h3>Observation <span class="dim">self</span></h3><Observation frame={frame} /></section>
            <section><h3>Waiting actions</h3><Waiting frame={frame} tree={tree} /></section>
            <section class="wide"><h3>Why <span class="dim">tick {frame.tick}</span></h3><Why why={s.why} tree={tree} onPick={setPicked} /></section>
            <section class="wide"><h3>Timeline</h3><Timeline frames={s.frames} upTo={frame.tick} tree={tree} /></section>
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

function TreesView({ s }: { s: State }) {
  const name = s.selectedTree ?? s.trees[0]?.name ?? null;
  const tree = s.trees.find((t) => t.name === name);
  return (
    <div class="trees-view">
      <aside class="side">
        <h3>Loaded trees</h3>
        {s.trees.map((t) => (
          <button type="button" key={t.name} class={`tree-item ${t.name === name ? 'selected' : ''}`} onClick={() => store.set({ selectedTree: t.name })}>
            <span>{t.name}</span>
            <span class="dim">{t.nodes.length} nodes</span>
            {t.errors.length > 0 && <span class="badge err">{t.errors.length} errors</span>}
          </button>
        ))}
      </aside>
      <main class="main">
        {tree === undefined ? (
          <div class="placeholder">No trees loaded.</div>
        ) : (
          <>
            <div class="agent-head">
              <h2>{tree.name}</h2>
              <span class="mono dim">version {tree.version}</span>
            </div>
            {tree.description !== null && <p class="desc">{tree.description}</p>}
            {tree.errors.length > 0 && (
              <ul class="errors">{tree.errors.map((e, k) => <li key={k}><b>{e.code}</b> {e.path}: {e.message}</li>)}</ul>
            )}
            <div class="graph-box"><TreeGraph tree={tree} /></div>
          </>
        )}
      </main>
    </div>
  );
}

function App() {
  const s = useStore();
  return (
    <div class="app">
      <header>
        <span class="brand">
          <svg class="logo" viewBox="0 0 24 24" width="18" height="18" aria-hidden="true">
            <circle cx="12" cy="4" r="2.6" />
            <circle cx="5" cy="13" r="2.6" />
            <circle cx="19" cy="13" r="2.6" />
            <circle cx="12" cy="20" r="2.6" />
            <path d="M12 6.5 5 10.5M12 6.5l7 4M5 15.5l7 2" />
          </svg>
          Canopy <b>inspector</b>
        </span>
        <nav>
          <button type="button" class={s.view === 'live' ? 'on' : ''} onClick={() => store.set({ view: 'live' })}>Live</button>
          <button type="button" class={s.view === 'trees' ? 'on' : ''} onClick={() => store.set({ view: 'trees' })}>Trees</button>
        </nav>
        <span class="spacer" />
        {s.error !== null && <span class="error-msg">{s.error}</span>}
        <span class={`conn ${s.connected ? 'on' : 'off'}`}>{s.connected ? 'connected' : 'reconnecting…'}</span>
      </header>
      {s.view === 'trees' ? (
        <TreesView s={s} />
      ) : (
        <div class="live-view">
          <aside class="side">
            <h3>Sessions</h3>
            <Sessions sessions={s.sessions} charts={s.charts} selected={s.session} />
            <h3>Agents</h3>
            <Hierarchy agents={s.agents} watching={s.watching?.agent ?? null} />
          </aside>
          <main class="main"><AgentView s={s} /></main>
        </div>
      )}
    </div>
  );
}

store.connect();
render(<App />, document.getElementById('app')!);
