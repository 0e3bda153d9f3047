// The development-only control of the watched agent (docs/inspector.md "Control"): force the picked node's
// status, break on it, and the banner of a held lockstep tick. Shown only when the service allows control.

import { store, type State } from './store';

const STATUSES = ['success', 'failure', 'running'] as const;

/** Buttons for the picked node of the watched agent, and the "paused" banner of the shown session. */
export function ControlBar({ s, picked }: { s: State; picked: number | null }) {
  const w = s.watching;
  if (s.control === null || w === null || s.view !== 'live') return null;
  const c = s.controlState;
  const paused = c.paused.find((p) => p.session === w.session) ?? null;
  const same = (t: { session: string; agent: unknown; node: number }): boolean => t.session === w.session && t.agent === w.agent && t.node === picked;
  const forced = c.forces.find(same)?.status ?? null;
  const breaking = c.breaks.some(same);
  const name = (node: number): string => w.tree?.nodes[node]?.name ?? w.tree?.nodes[node]?.path ?? `#${node}`;
  return (
    <div class="control-bar">
      {paused !== null && (
        <div class="paused-banner" role="alert">
          paused at tick <b>{paused.tick}</b> on {name(paused.node)}
          <button type="button" class="release" onClick={() => store.release()}>release</button>
        </div>
      )}
      {picked === null ? (
        <span class="dim">Control (development only): pick a node to force its status or break on it.</span>
      ) : (
        <span class="control-node">
          <b>{name(picked)}</b>
          {STATUSES.map((st) => (
            <button type="button" key={st} class={`force ${forced === st ? 'on' : ''}`} onClick={() => store.force(picked, st)}>force {st}</button>
          ))}
          <button type="button" class="force-clear" disabled={forced === null} onClick={() => store.force(picked, null)}>clear</button>
          {w.session !== '' && (
            <button type="button" class={`break ${breaking ? 'on' : ''}`} onClick={() => store.breakAt(picked, !breaking)}>{breaking ? 'remove break' : 'break here'}</button>
          )}
        </span>
      )}
    </div>
  );
}
