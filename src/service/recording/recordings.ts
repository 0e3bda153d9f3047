// The service's recordings: which sessions are recorded (hello.record, CANOPY_RECORD=all, the HTTP
// route), the folder they are written to (rotation, total cap) and the routes that list and serve them.

import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, readdirSync, readFileSync } from 'node:fs';
import { readdir, stat, unlink } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import type { FastifyPluginAsync } from 'fastify';
import type { Logger } from 'pino';
import type { TreeLibrary } from '../../bt/library.js';
import { ErrorCode } from '../../protocol/index.js';
import { EXTENSION, SAFE_NAME, parsePartFileName, partFileName, type TreeTable } from '../../record/format.js';
import { RecordingWriter } from '../../record/writer.js';
import { threadSink } from './compressor.js';
import type { Config } from '../config.js';
import type { ServiceContext } from '../context.js';
import { HttpError, HttpErrorCode, respond } from '../http/http.js';
import type { Metrics } from '../metrics.js';
import { SessionRecorder } from './recorder.js';
import type { Session } from '../sessions/session.js';

/** The Canopy version written into recording headers. */
export const CANOPY_VERSION = readVersion();

/** One part file as `GET /v1/recordings` lists it. */
export interface RecordingListing {
  readonly id: string;
  readonly recording: string;
  readonly part: number;
  readonly bytes: number;
  readonly modified: string;
  /** Being written now. */
  readonly active: boolean;
  /** The session, while it is being recorded. */
  readonly session: string | null;
}

/** What the recordings need from the service. */
export interface RecordingsOptions {
  readonly config: Pick<Config, 'record' | 'recordDir' | 'recordMaxBytes' | 'recordMaxTotalBytes' | 'recordCodec' | 'plugins'>;
  readonly library: TreeLibrary;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Raw bytes per compressed block (default 1 MiB). */
  readonly blockBytes?: number;
}

/** Every recording of the service. */
export class Recordings {
  readonly dir: string;
  private readonly o: RecordingsOptions;
  private readonly active = new Map<Session, SessionRecorder>();
  /** Part files being written (never deleted by the cap). */
  private readonly writing = new Set<string>();
  private readonly closing = new Set<Promise<void>>();
  private table: TreeTable | undefined;
  /** The trees new recordings start with: the loaded library, then each reload's. */
  private library: TreeLibrary;
  /** Bytes of recordings in the folder (scanned on first use, then counted). */
  private total: number | null = null;
  private pruning = false;
  /** enforceCap was called while a prune ran: it runs again when that one ends. */
  private pruneAgain = false;
  /** Bytes written before the folder was first scanned (the scan may see some of them too: the total errs high, never low). */
  private writtenWhileScanning = 0;

  constructor(o: RecordingsOptions) {
    this.o = o;
    this.dir = resolve(o.config.recordDir);
    this.library = o.library;
  }

  /** A new session: recorded at once under `CANOPY_RECORD=all`. */
  sessionCreated(session: Session): void {
    if (this.o.config.record === 'all') this.start(session);
  }

  /** For `welcome.recording`: starts recording when the hello asks, and says which recording it is. */
  forHello(session: Session, record: boolean): string | undefined {
    if (record) this.start(session);
    return this.active.get(session)?.id;
  }

  /** The session's recording, if it is recorded. */
  of(session: Session): SessionRecorder | undefined {
    return this.active.get(session);
  }

  /** Starts recording `session` (nothing if it is recorded already). A disk problem arrives later, as E_RECORDING. */
  start(session: Session): SessionRecorder {
    const existing = this.active.get(session);
    if (existing !== undefined) return existing;
    const id = `${stamp()}-${session.id.slice(0, 8)}-${randomBytes(2).toString('hex')}`;
    let recorder: SessionRecorder | undefined;
    const writer = new RecordingWriter({
      dir: this.dir,
      recording: id,
      maxBytes: this.o.config.recordMaxBytes,
      codec: this.o.config.recordCodec,
      sink: threadSink,
      ...(this.o.blockBytes !== undefined ? { blockBytes: this.o.blockBytes } : {}),
      header: {
        canopy: CANOPY_VERSION,
        session: session.id,
        mode: session.mode,
        hz: session.hz,
        fields: session.fields,
        agentsAtStart: session.agentCount(),
        plugins: this.plugins(),
        ...this.trees(),
      },
      onWritten: (bytes) => {
        this.o.metrics.recordingBytes.inc(bytes);
        if (this.total !== null) this.total += bytes;
        else this.writtenWhileScanning += bytes;
        this.enforceCap();
      },
      onPartStarted: (path) => this.writing.add(path),
      onPartClosed: (path) => {
        this.writing.delete(path);
        // A finished part may be deleted now: the cap may have been passed while it was being written.
        this.enforceCap();
      },
      onError: (err) => this.failed(session, recorder!, err),
    });
    recorder = new SessionRecorder(writer, id, session.mode, () => void this.stop(session));
    this.active.set(session, recorder);
    session.recorder = recorder;
    this.o.metrics.recordingsStarted.inc();
    this.o.logger.info({ session: session.id, recording: id, dir: this.dir }, 'recording started');
    return recorder;
  }

  /** Stops recording `session`; resolves once its file is complete on disk. The recording id, or null if none. */
  async stop(session: Session): Promise<string | null> {
    const recorder = this.active.get(session);
    if (recorder === undefined) return null;
    this.active.delete(session);
    if (session.recorder === recorder) session.recorder = null;
    const closed = recorder.writer.close(session.ended ? 'session ended' : 'stopped');
    this.closing.add(closed);
    await closed;
    this.closing.delete(closed);
    this.writing.delete(recorder.writer.file);
    return recorder.id;
  }

  /** Shutdown: every recording finished on disk. */
  async closeAll(): Promise<void> {
    await Promise.all([...this.active.keys()].map((s) => this.stop(s)));
    await Promise.all(this.closing);
  }

  /** Every part file in the folder, newest first. */
  async list(): Promise<RecordingListing[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return [];
    }
    const sessions = new Map<string, string>();
    for (const [s, r] of this.active) sessions.set(r.id, s.id);
    const out: RecordingListing[] = [];
    for (const name of names) {
      const parsed = parsePartFileName(name);
      if (parsed === null) continue;
      const path = join(this.dir, name);
      const st = await stat(path).catch(() => null);
      if (st === null) continue;
      out.push({
        id: name.slice(0, -EXTENSION.length),
        recording: parsed.recording,
        part: parsed.part,
        bytes: st.size,
        modified: st.mtime.toISOString(),
        active: this.writing.has(path),
        session: sessions.get(parsed.recording) ?? null,
      });
    }
    // A recording just started may not have reached the disk yet: it is listed all the same.
    for (const [s, r] of this.active) {
      const id = r.writer.file.slice(this.dir.length + 1, -EXTENSION.length);
      if (!out.some((o) => o.id === id)) {
        out.push({ id, recording: r.id, part: parsePartFileName(`${id}${EXTENSION}`)?.part ?? 1, bytes: 0, modified: new Date().toISOString(), active: true, session: s.id });
      }
    }
    return out.toSorted((a, b) => b.modified.localeCompare(a.modified) || a.id.localeCompare(b.id));
  }

  /**
   * The file of `id` (a part id, or a recording id for its first part), or null. Only safe names are
   * looked up, and only inside the folder: no path can be formed from `id`.
   */
  file(id: string): string | null {
    if (!SAFE_NAME.test(id)) return null;
    const name = parsePartFileName(`${id}${EXTENSION}`) !== null ? `${id}${EXTENSION}` : partFileName(id, 1);
    const path = join(this.dir, name);
    if (!path.startsWith(this.dir + sep)) return null;
    return path;
  }

  private failed(session: Session, recorder: SessionRecorder, err: Error): void {
    const reason = describeFailure(err);
    this.o.metrics.recordingFailures.inc();
    this.o.logger.warn({ err, session: session.id, recording: recorder.id }, 'recording stopped');
    if (this.active.get(session) === recorder) {
      this.active.delete(session);
      if (session.recorder === recorder) session.recorder = null;
    }
    this.writing.delete(recorder.writer.file);
    session.notice(ErrorCode.E_RECORDING, `recording ${recorder.id} stopped: ${reason}; the session goes on unrecorded`);
  }

  /**
   * Deletes the oldest finished parts while the folder holds more than the cap. The total is counted, not
   * re-read: bytes written while a prune runs are never lost from it.
   */
  private enforceCap(): void {
    const cap = this.o.config.recordMaxTotalBytes;
    if (cap <= 0) return;
    if (this.pruning) {
      // Bytes written or parts finished meanwhile: look again once this prune is done.
      this.pruneAgain = true;
      return;
    }
    if (this.total !== null && this.total <= cap) return;
    this.pruning = true;
    void (async () => {
      try {
        const parts = (await this.list()).toSorted((a, b) => a.modified.localeCompare(b.modified) || a.recording.localeCompare(b.recording) || a.part - b.part);
        if (this.total === null) this.total = parts.reduce((n, p) => n + p.bytes, 0) + this.writtenWhileScanning;
        for (const p of parts) {
          if (this.total <= cap) break;
          const path = join(this.dir, `${p.id}${EXTENSION}`);
          if (p.active || this.writing.has(path)) continue;
          const gone = await unlink(path).then(() => true, () => false);
          if (!gone) continue;
          this.total -= p.bytes;
          this.o.logger.info({ file: path, bytes: p.bytes }, 'recording deleted (CANOPY_RECORD_MAX_TOTAL_BYTES)');
        }
      } finally {
        this.pruning = false;
        if (this.pruneAgain) {
          this.pruneAgain = false;
          this.enforceCap();
        }
      }
    })();
  }

  private pluginList: Array<{ name: string }> | undefined;

  /** The plugin folder's modules (the catalog does not keep plugin identities: module names stand for them). */
  private plugins(): Array<{ name: string }> {
    if (this.pluginList !== undefined) return this.pluginList;
    const dir = this.o.config.plugins;
    let names: string[] = [];
    try {
      names = dir === null ? [] : readdirSync(dir).filter((f) => /\.(?:js|mjs|cjs)$/.test(f)).toSorted();
    } catch {
      // the folder was readable at start-up; if it is not now, the header just lists none
    }
    this.pluginList = names.map((f) => ({ name: f.replace(/\.(?:js|mjs|cjs)$/, '') }));
    return this.pluginList;
  }

  /**
   * The trees were reloaded (the pool has the new library already): every recording gets a TREES record with the
   * new table and what the reload did — `changed` trees and the service's `policy` — so that replay applies the
   * same reload before the same tick (`after`: the last tick the session had started, null before its first).
   */
  treesChanged(library: TreeLibrary, changed: readonly string[], policy: 'restart' | 'keep'): void {
    this.library = library;
    this.table = undefined;
    const table = this.trees();
    for (const [session, recorder] of this.active) {
      recorder.writer.setTrees({ ...table, reload: { changed: [...changed], policy, after: session.lastTick ?? null } } as TreeTable);
    }
  }

  /** The loaded trees by content hash, computed once per library. */
  private trees(): TreeTable {
    if (this.table !== undefined) return this.table;
    const trees: Record<string, { hash: string; def: string }> = {};
    const definitions: Record<string, unknown> = {};
    for (const name of this.library.names()) {
      const definition = this.library.definition(name);
      const def = createHash('sha256').update(JSON.stringify(definition)).digest('hex').slice(0, 16);
      trees[name] = { hash: this.library.get(name)!.hash, def };
      definitions[def] = definition;
    }
    this.table = { trees, definitions };
    return this.table;
  }
}

/** A sentence for a disk error. */
function describeFailure(err: Error): string {
  const code = (err as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOSPC':
      return 'the disk is full (ENOSPC)';
    case 'EDQUOT':
      return 'the disk quota is exhausted (EDQUOT)';
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return `the recording folder is not writable (${code})`;
    case 'ENOTDIR':
    case 'EEXIST':
      return `the recording folder cannot be used (${code})`;
    default:
      return code === undefined ? err.message : `${err.message}`;
  }
}

/** UTC time as a file-name stem: 20261123T095233Z. */
function stamp(): string {
  return new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
}

function readVersion(): string {
  for (const rel of ['../../../package.json', '../../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'canopy' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // not there: try the next place (src/ or dist/src/)
    }
  }
  return '0.0.0';
}

/** POST/DELETE /v1/sessions/:id/recording, GET /v1/recordings, GET /v1/recordings/:id. */
export const recordingRoutes: FastifyPluginAsync<{ ctx: ServiceContext }> = async (app, { ctx }) => {
  const recordings = ctx.recordings;
  const session = (id: string): Session => {
    const s = ctx.sessions.get(id);
    if (s === undefined || s.ended) throw new HttpError(404, HttpErrorCode.E_UNKNOWN_SESSION, `no session ${JSON.stringify(id)}`);
    return s;
  };

  app.post<{ Params: { id: string } }>('/v1/sessions/:id/recording', async (request, reply) => {
    const s = session(request.params.id);
    const already = recordings.of(s) !== undefined;
    const r = recordings.start(s);
    return respond(request, reply, { session: s.id, recording: r.id, file: r.writer.file }, already ? 200 : 201);
  });

  app.delete<{ Params: { id: string } }>('/v1/sessions/:id/recording', async (request, reply) => {
    const s = session(request.params.id);
    const id = await recordings.stop(s);
    if (id === null) throw new HttpError(404, HttpErrorCode.E_NOT_FOUND, `session ${s.id} is not being recorded`);
    return respond(request, reply, { session: s.id, recording: id, stopped: true });
  });

  app.get('/v1/recordings', async (request, reply) => respond(request, reply, { dir: recordings.dir, recordings: await recordings.list() }));

  app.get<{ Params: { id: string } }>('/v1/recordings/:id', async (request, reply) => {
    const path = recordings.file(request.params.id);
    const st = path === null ? null : await stat(path).catch(() => null);
    if (path === null || st === null || !st.isFile()) {
      throw new HttpError(404, HttpErrorCode.E_NOT_FOUND, `no recording ${JSON.stringify(request.params.id)}`);
    }
    const name = path.slice(path.lastIndexOf(sep) + 1);
    return reply
      .type('application/octet-stream')
      .header('content-disposition', `attachment; filename="${name}"`)
      .header('content-length', st.size)
      .send(createReadStream(path));
  });
};
