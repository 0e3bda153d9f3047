// The sessions list: one card per live session with its figures and a uPlot chart of the last minutes.

import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
// oxlint-disable-next-line import/no-unassigned-import -- the chart's stylesheet
import 'uplot/dist/uPlot.min.css';
import { store } from './store';
import type { SessionSample } from './types';

const fmt = (n: number): string => (n >= 1000 ? `${(n / 1000).toFixed(n >= 10_000 ? 0 : 1)}k` : n >= 10 ? n.toFixed(0) : n.toFixed(1));

/** A small two-series chart: ticks/s and decisions/s. */
function Chart({ samples }: { samples: SessionSample[] }) {
  const el = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const data = (): uPlot.AlignedData => [
    samples.map((s) => s.t / 1000),
    samples.map((s) => s.ticksPerSec),
    samples.map((s) => s.decisionsPerSec),
  ];
  useEffect(() => {
    if (el.current === null) return;
    plot.current = new uPlot(
      {
        width: 248,
        height: 64,
        legend: { show: false },
        cursor: { show: false },
        axes: [{ show: false }, { show: false, scale: 't' }],
        // Ticks and decisions on their own scales: 10 ticks/s next to 10,000 decisions/s stay readable.
        scales: { x: { time: true }, t: { range: (_u, _min, max) => [0, Math.max(1, max * 1.15)] }, d: { range: (_u, _min, max) => [0, Math.max(1, max * 1.15)] } },
        series: [{}, { scale: 't', stroke: '#60a5fa', width: 1.5, fill: 'rgba(96,165,250,0.12)', points: { show: false } }, { scale: 'd', stroke: '#34d399', width: 1.5, points: { show: false } }],
      },
      data(),
      el.current,
    );
    return () => plot.current?.destroy();
  }, []);
  useEffect(() => plot.current?.setData(data()), [samples]);
  return <div class="chart" ref={el} />;
}

export function Sessions({ sessions, charts, selected }: { sessions: SessionSample[]; charts: Map<string, SessionSample[]>; selected: string | null }) {
  if (sessions.length === 0) return <div class="empty">No live sessions. Connect a game server to see it here.</div>;
  return (
    <div class="sessions">
      {sessions.map((s) => (
        <button type="button" class={`session ${s.session === selected ? 'selected' : ''}`} key={s.session} onClick={() => store.selectSession(s.session)}>
          <div class="session-head">
            <span class="mono">{s.session.slice(0, 8)}</span>
            <span class={`badge ${s.mode}`}>{s.mode === 'fixed' ? `${s.hz} Hz` : 'lockstep'}</span>
            <span class={`dot ${s.connected ? 'on' : 'off'}`} title={s.connected ? 'connected' : 'disconnected'} />
          </div>
          <div class="figures">
            <span><b class="session-agents">{s.agents.toLocaleString()}</b> agents</span>
            <span>tick <b>{s.tick ?? '—'}</b></span>
            <span><b>{fmt(s.ticksPerSec)}</b> ticks/s</span>
            <span><b class="decisions">{fmt(s.decisionsPerSec)}</b> decisions/s</span>
            {s.mode === 'fixed' && <span>late <b>{s.lateMs.toFixed(1)}</b> ms</span>}
            {s.mode === 'fixed' && <span>missed <b>{s.missed}</b></span>}
            <span>last tick took <b>{s.tickMs.toFixed(1)}</b> ms</span>
          </div>
          <Chart samples={charts.get(s.session) ?? []} />
          <div class="legend"><i class="l-ticks" /> ticks/s <i class="l-dec" /> decisions/s</div>
        </button>
      ))}
    </div>
  );
}
