// A game server's snapshots played straight into a service Session (no socket): the in-process
// benchmarks of the session path (bench/lod.ts, bench/record-cost.ts) build the frames first and
// then time only the service's side.

import { RowWriter, type ObservationRow } from '../../src/client/index.js';
import { encode, encodeDecisions, parseClientFrame, type SnapshotMessage } from '../../src/protocol/index.js';
import type { Session } from '../../src/service/sessions/session.js';
import { FIELDS, type GameWorld } from '../load/world.js';

/**
 * `ticks` snapshot frames (20 Hz) of `world`, built before any clock starts: the game server's work is
 * not the service's. `pick` chooses the rows sent on tick `t` (all of them by default).
 */
export function snapshotFrames(
  world: GameWorld,
  ticks: number,
  pick: (rows: readonly ObservationRow[], t: number) => readonly ObservationRow[] = (rows) => rows,
): Buffer[] {
  const rows = new RowWriter(FIELDS);
  const frames: Buffer[] = [];
  for (let t = 1; t <= ticks; t++) {
    world.step(0.05);
    world.writeRows(rows);
    frames.push(Buffer.from(encode({ t: 'snapshot', tick: t, time: world.time, agents: pick(rows.rows(), t), results: world.results() })));
  }
  return frames;
}

/**
 * Plays the frames through the session as the WebSocket handler would (parse, lockstep tick, the
 * decisions encoded unless the recorder already holds their bytes) and feeds the decisions back to the
 * world; returns the actions issued.
 */
export async function playFrames(session: Session, world: GameWorld, frames: readonly Buffer[]): Promise<number> {
  let actions = 0;
  for (const bytes of frames) {
    const parsed = parseClientFrame(bytes, 1 << 30, { fieldCount: FIELDS.length, mode: 'lockstep', packRows: true });
    if (!parsed.ok) throw new Error(parsed.message);
    const out = await session.lockstep(parsed.msg as SnapshotMessage, bytes);
    if (out.encoded === undefined) encodeDecisions(out.decisions);
    actions += out.decisions.actions?.length ?? 0;
    world.apply(out.decisions.actions ?? [], out.decisions.cancels ?? []);
  }
  return actions;
}
