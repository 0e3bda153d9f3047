// The flight recorder attached to one session: turns what the session applies and decides into records
// of src/record's format. Inputs are logged where the session hands them to the pool, ticks where they
// start, decisions as encoded for the wire. A copy into the writer's block per call; the disk is the writer's job.

import { encodeDecisions, encode, hasContent, type ActionResult, type AgentId, type BlackboardEntry, type DecisionsFields, type LodEntry, type SnapshotMessage } from '../../protocol/index.js';
import { Kind, snapshotRecordFields } from '../../record/format.js';
import type { RecordingWriter } from '../../record/writer.js';
import type { SpawnEntry } from '../pool/index.js';
import type { SessionTap } from '../sessions/session.js';

/** One session's recording: a SessionTap writing to a RecordingWriter. */
export class SessionRecorder implements SessionTap {
  readonly writer: RecordingWriter;
  /** The recording id (`GET /v1/recordings/:id` serves its first part). */
  readonly id: string;
  private readonly fixed: boolean;
  private readonly onEnd: () => void;

  constructor(writer: RecordingWriter, id: string, mode: 'fixed' | 'lockstep', onEnd: () => void) {
    this.writer = writer;
    this.id = id;
    this.fixed = mode === 'fixed';
    this.onEnd = onEnd;
  }

  spawn(entries: readonly SpawnEntry[]): void {
    this.writer.value(Kind.SPAWN, entries);
  }

  despawn(ids: readonly AgentId[]): void {
    this.writer.value(Kind.DESPAWN, ids);
  }

  bb(set: readonly BlackboardEntry[]): void {
    this.writer.value(Kind.BB, set);
  }

  lod(entries: readonly LodEntry[]): void {
    this.writer.value(Kind.LOD, entries);
  }

  results(results: readonly ActionResult[]): void {
    this.writer.value(Kind.RESULTS, results);
  }

  snapshot(msg: SnapshotMessage, raw: Uint8Array | undefined): void {
    if (raw !== undefined) {
      // The wire bytes as they are, copied into the block: no re-encoding on the session's path.
      this.writer.bytes(Kind.SNAPSHOT_FRAME, raw);
      return;
    }
    this.writer.bytes(Kind.SNAPSHOT, encode(snapshotRecordFields(msg)));
  }

  tick(tick: number, time: number, dt: number, basedOn: number | undefined): void {
    this.writer.tick(tick, time, dt, basedOn ?? null);
  }

  decisions(d: DecisionsFields): Buffer | undefined {
    // Fixed mode sends nothing for a tick with nothing to say (a heartbeat is not a tick's output).
    const bytes = !this.fixed || hasContent(d) ? encodeDecisions(d) : undefined;
    if (bytes !== undefined) this.writer.bytes(Kind.DECISIONS, bytes);
    this.writer.tickEnded();
    return bytes;
  }

  ended(): void {
    this.onEnd();
  }
}
