// The recordings view: the service's recordings (GET /v1/recordings), one opened with its agents in the
// same hierarchy, any agent scrubbed over any tick, and a what-if against the service's current trees
// with the divergences outlined on the tree.

import { AgentView } from './agent';
import { Hierarchy } from './hierarchy';
import { store, type State } from './store';

const size = (n: number): string => (n >= 2 ** 20 ? `${(n / 2 ** 20).toFixed(1)} MB` : `${(n / 1024).toFixed(1)} KB`);

function WhatIf({ s }: { s: State }) {
  const w = s.whatif;
  if (w === null) {
    return (
      <div class="whatif">
        <button type="button" class="primary" onClick={() => store.runWhatIf()}>Run what-if against the current trees</button>
        <span class="dim">Replays the recording with the trees loaded now and shows which agents would have decided differently.</span>
      </div>
    );
  }
  if (w.running || w.report === null) return <div class="whatif"><span class="dim">Running what-if…</span></div>;
  const r = w.report;
  return (
    <div class="whatif done">
      <div class="whatif-head">
        <b class="whatif-summary">{r.summary.agentsAffected} of {r.agents} agents decide differently</b>
        <span class="dim">over {r.ticks} ticks · trees changed: {r.treesChanged.length === 0 ? 'none' : r.treesChanged.join(', ')}</span>
        <button type="button" onClick={() => store.runWhatIf()}>Run again</button>
      </div>
      {r.changes.length > 0 && (
        <div class="changes">
          {r.changes.slice(0, 50).map((c) => (
            <button type="button" class="change" key={String(c.id)} onClick={() => store.watchAt(c.id, c.label, c.firstTick)}>
              <span class="cl">{c.label || `#${String(c.id)}`}</span>
              <span class="dim">tick {c.firstTick}</span>
              <span>{c.divergence === null ? 'decisions differ' : `${c.divergence.names}: ${c.divergence.recorded} → ${c.divergence.changed}`}</span>
            </button>
          ))}
        </div>
      )}
    </div>
  );
}

export function RecordingsView({ s }: { s: State }) {
  const rec = s.recording;
  return (
    <div class="live-view">
      <aside class="side">
        <h3>
          Recordings{' '}
          <button type="button" class="link-button" onClick={() => store.send({ t: 'recordings' })}>refresh</button>
        </h3>
        <div class="rec-list">
          {s.recordings === null ? (
            <div class="empty">loading…</div>
          ) : s.recordings.length === 0 ? (
            <div class="empty">No recordings. Record a session with hello.record, CANOPY_RECORD=all or POST /v1/sessions/:id/recording.</div>
          ) : (
            s.recordings.map((r) => (
              <button type="button" key={r.id} class={`recording ${rec?.id === r.id || s.opening === r.id ? 'selected' : ''}`} onClick={() => store.openRecording(r.id)}>
                <span class="mono rid">{r.id}</span>
                <span class="dim">{new Date(r.modified).toLocaleString()} · {size(r.bytes)}</span>
                {r.active && <span class="badge">recording</span>}
              </button>
            ))
          )}
        </div>
        {rec !== null && (
          <>
            <h3>Agents</h3>
            <Hierarchy agents={s.agents} watching={s.watching?.agent ?? null} />
          </>
        )}
      </aside>
      <main class="main">
        {s.opening !== null ? (
          <div class="placeholder">Opening {s.opening}…</div>
        ) : rec === null ? (
          <div class="placeholder">Open a recording to replay it: any agent, any tick, and a what-if against the current trees.</div>
        ) : (
          <>
            <div class="agent-head rec-head">
              <h2>Recording <span class="mono">{rec.id}</span></h2>
              <span class="badge">{rec.header.mode === 'fixed' ? `${rec.header.hz} Hz` : 'lockstep'}</span>
              <span class="dim">ticks {rec.firstTick ?? '—'}–{rec.lastTick ?? '—'} · started {new Date(rec.header.startedAt).toLocaleString()}</span>
              {rec.problem !== null && <span class="badge err">{rec.problem}</span>}
            </div>
            <WhatIf s={s} />
            <AgentView s={s} />
          </>
        )}
      </main>
    </div>
  );
}
