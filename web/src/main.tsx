// The inspector page: the live view (sessions and agents on the left, the watched agent on the
// right), every loaded tree, and the recordings view.

import { render } from 'preact';
import { AgentView } from './agent';
import { TreeGraph } from './graph';
import { Hierarchy } from './hierarchy';
import { RecordingsView } from './recordings';
import { Sessions } from './sessions';
import { store, useStore, type State } from './store';
// oxlint-disable-next-line import/no-unassigned-import -- the page's stylesheet
import './style.css';

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
          <button type="button" class={s.view === 'live' ? 'on' : ''} onClick={() => store.setView('live')}>Live</button>
          <button type="button" class={s.view === 'trees' ? 'on' : ''} onClick={() => store.setView('trees')}>Trees</button>
          <button type="button" class={s.view === 'recordings' ? 'on' : ''} onClick={() => store.setView('recordings')}>Recordings</button>
        </nav>
        <span class="spacer" />
        {s.error !== null && <span class="error-msg">{s.error}</span>}
        <span class={`conn ${s.connected ? 'on' : 'off'}`}>{s.connected ? 'connected' : 'reconnecting…'}</span>
      </header>
      {s.view === 'trees' ? (
        <TreesView s={s} />
      ) : s.view === 'recordings' ? (
        <RecordingsView s={s} />
      ) : (
        <div class="live-view">
          <aside class="side">
            <h3>Sessions</h3>
            <Sessions sessions={s.sessions} charts={s.charts} selected={s.session} />
            <h3>Agents</h3>
            <Hierarchy agents={s.agents} watching={s.watching?.agent ?? null} activity={s.activity} />
          </aside>
          <main class="main"><AgentView s={s} /></main>
        </div>
      )}
    </div>
  );
}

store.connect();
render(<App />, document.getElementById('app')!);
