// The inspector's data stream (GET /v1/inspector/ws) against a real service with a worker thread: pushes
// at most 10 a second with every frame of the watched agent (coalesced, none lost), only what the page
// subscribed to, watches shared between pages and ended when the last page leaves.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { CanopyClient } from '../../src/client/index.js';
import { PUSH_INTERVAL_MS } from '../../src/inspector/stream.js';
import { http, start, writeFixture, type Running } from '../service/harness.js';

/** Waits on an action the game answers: runs every tick. */
const WALKER = { root: { type: 'sequence', name: 'walk', children: [{ type: 'action', name: 'step', action: 'step', instant: true }, { type: 'running' }] } };

type Msg = Record<string, unknown> & { t: string };

/** One inspector page as the server sees it: a socket and every message it received, with arrival times. */
class Page {
  readonly got: Array<{ at: number; msg: Msg }> = [];
  private waiters: Array<() => void> = [];
  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.got.push({ at: performance.now(), msg: JSON.parse(String(data)) as Msg });
      for (const w of this.waiters.splice(0)) w();
    });
  }
  static async open(port: number): Promise<Page> {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/inspector/ws`);
    const page = new Page(ws);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    await page.until((m) => m.t === 'hello');
    return page;
  }
  /** Resolves at the next message. */
  next(): Promise<void> {
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }
  send(msg: Record<string, unknown>): void {
    this.ws.send(JSON.stringify(msg));
  }
  /** Resolves with the first message (from `from` on) that `test` accepts. */
  async until(test: (m: Msg) => boolean, from = 0): Promise<Msg> {
    for (;;) {
      const hit = this.got.slice(from).find((g) => test(g.msg));
      if (hit !== undefined) return hit.msg;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }
  async close(): Promise<void> {
    const closed = new Promise((resolve) => this.ws.once('close', resolve));
    this.ws.close();
    await closed;
  }
}

describe('the inspector data stream', () => {
  let fixture: Awaited<ReturnType<typeof writeFixture>>;
  let svc: Running;
  let game: CanopyClient;

  beforeAll(async () => {
    fixture = await writeFixture({ walker: WALKER });
    svc = await start({ trees: fixture.trees, workers: 1 });
    game = await CanopyClient.connect(svc.wsUrl, { mode: 'fixed', hz: 50, reconnect: false });
    await game.spawn([{ id: 1, tree: 'walker', label: 'A/one' }, { id: 2, tree: 'walker', label: 'A/two' }]);
  });
  afterAll(async () => {
    await game?.close();
    await svc?.close();
    await fixture?.remove();
  });

  it('pushes at most 10 times a second and loses no frame of the watched agent', async () => {
    // When the service sent each push (it runs in this process): the pace is the sender's. The page's arrival times
    // also carry this process's own delays (a busy machine delivered two pushes 73 ms apart that left 100 ms apart).
    const sentAt: number[] = [];
    const send = WebSocket.prototype.send;
    WebSocket.prototype.send = function (this: WebSocket, data: unknown, ...rest: unknown[]) {
      if (typeof data === 'string' && data.startsWith('{"t":"push"')) sentAt.push(performance.now());
      return (send as (...args: unknown[]) => void).call(this, data, ...rest);
    } as typeof send;
    const page = await Page.open(svc.port);
    // The page is closed whatever happens: an open page keeps its session's activity, which a later test reads.
    try {
      page.send({ t: 'session', session: game.session });
      const agents = await page.until((m) => m.t === 'agents');
      expect(agents.rows).toEqual([[1, 0, 'A/one'], [2, 0, 'A/two']]);
      expect(agents.trees).toEqual(['walker']);
      page.send({ t: 'watch', agent: 2 });
      const watching = await page.until((m) => m.t === 'watching');
      expect(watching).toMatchObject({ agent: 2, label: 'A/two', tree: { name: 'walker' } });
      const from = page.got.length;
      // Wait for 120 frames (2.4 s of a 50 Hz session).
      const pushed = (): Msg[] => page.got.slice(from).map((g) => g.msg).filter((m) => m.t === 'push' && m.frames !== undefined);
      while (pushed().flatMap((m) => (m.frames as { frames: unknown[] }).frames).length < 120) await page.next();
      for (const m of pushed()) expect((m.frames as { agent: unknown }).agent).toBe(2);
      const ticks = pushed().flatMap((m) => (m.frames as { frames: Array<{ tick: number }> }).frames.map((f) => f.tick));
      // Every tick once, in order (a tick the service skipped under load is not a frame).
      for (let k = 1; k < ticks.length; k++) expect(ticks[k]).toBeGreaterThan(ticks[k - 1]!);
      expect(new Set(ticks).size).toBe(ticks.length);
      // Pushes are coalesced: n pushes, each sent an interval after the one before (a timer may fire a millisecond
      // early), span n − 1 intervals. Measured at the socket, a push's send may trail the moment it took its turn (the
      // message being written, the thread busy), which does not add up over pushes: one interval is allowed for it.
      expect(sentAt.length).toBeGreaterThan(5);
      const span = sentAt[sentAt.length - 1]! - sentAt[0]!;
      expect(span).toBeGreaterThanOrEqual((sentAt.length - 1) * (PUSH_INTERVAL_MS - 1) - PUSH_INTERVAL_MS);
      const pushes = page.got.slice(from).filter((g) => g.msg.t === 'push');
      expect(pushes.length).toBeLessThan(ticks.length / 2);
    } finally {
      WebSocket.prototype.send = send;
      await page.close();
    }
  });

  it('explains a tick of the ring buffer, and says null for one that left it', async () => {
    const page = await Page.open(svc.port);
    page.send({ t: 'session', session: game.session });
    page.send({ t: 'watch', agent: 1 });
    await page.until((m) => m.t === 'watching');
    const push = await page.until((m) => m.t === 'push' && m.frames !== undefined);
    const tick = (push.frames as { frames: Array<{ tick: number }> }).frames[0]!.tick;
    page.send({ t: 'why', tick });
    expect(await page.until((m) => m.t === 'why')).toMatchObject({ agent: 1, tick, report: { tick, checks: [] } });
    page.send({ t: 'why', tick: 1 });
    expect(await page.until((m) => m.t === 'why' && m.tick === 1)).toMatchObject({ report: null });
    await page.close();
  });

  it('shares a watch between pages and ends it with the last page', async () => {
    const a = await Page.open(svc.port);
    const b = await Page.open(svc.port);
    for (const p of [a, b]) {
      p.send({ t: 'session', session: game.session });
      p.send({ t: 'watch', agent: 1 });
      await p.until((m) => m.t === 'watching');
    }
    await a.close();
    // b still receives frames: the ring buffer lives on.
    const since = b.got.length;
    await b.until((m) => m.t === 'push' && m.frames !== undefined, since);
    expect((await svc.server.pool.frames(game.session, 1)).length).toBeGreaterThan(0);
    await b.close();
    // The last page gone, the agent is no longer watched: no frames kept.
    await expect.poll(async () => (await svc.server.pool.frames(game.session, 1)).length, { timeout: 10_000 }).toBe(0);
  });

  it('keeps only the last of watches sent faster than they are answered (no agent left watched)', async () => {
    const page = await Page.open(svc.port);
    page.send({ t: 'session', session: game.session });
    page.send({ t: 'watch', agent: 1 });
    page.send({ t: 'watch', agent: 2 });
    await page.until((m) => m.t === 'watching' && m.agent === 2);
    await page.until((m) => m.t === 'push' && m.frames !== undefined);
    expect(page.got.filter((g) => g.msg.t === 'watching').map((g) => g.msg.agent)).toEqual([2]);
    await expect.poll(async () => (await svc.server.pool.frames(game.session, 1)).length, { timeout: 10_000 }).toBe(0);
    expect((await svc.server.pool.frames(game.session, 2)).length).toBeGreaterThan(0);
    await page.close();
  });

  it("reports what the shown session's agents decided since the page showed it", async () => {
    const page = await Page.open(svc.port);
    page.send({ t: 'session', session: game.session });
    await page.until((m) => m.t === 'agents');
    // An agent spawned now decides 'step' on its first tick.
    await game.spawn([{ id: 3, tree: 'walker', label: 'B/three' }]);
    await expect
      .poll(async () => {
        const from = page.got.length;
        page.send({ t: 'activity' });
        const a = await page.until((m) => m.t === 'activity', from);
        return (a.rows as unknown[][]).map((r) => [r[0], (a.actions as string[])[r[1] as number], r[2], r[3]]);
      }, { timeout: 10_000 })
      .toEqual([[3, 'step', null, null]]);
    await page.close();
  });

  it('answers malformed and unknown messages with an error and goes on', async () => {
    const page = await Page.open(svc.port);
    page.ws.send('not json');
    expect(await page.until((m) => m.t === 'error')).toMatchObject({ message: 'not JSON' });
    let from = page.got.length;
    page.send({ t: 'teleport' });
    expect(await page.until((m) => m.t === 'error', from)).toMatchObject({ message: 'unknown message "teleport"' });
    from = page.got.length;
    page.send({ t: 'session', session: 'nope' });
    expect(await page.until((m) => m.t === 'error', from)).toMatchObject({ message: 'no session nope' });
    from = page.got.length;
    page.send({ t: 'session', session: game.session });
    page.send({ t: 'watch', agent: 99 });
    expect(await page.until((m) => m.t === 'error', from)).toMatchObject({ message: `no agent 99 in session ${game.session}` });
    await page.close();
  });

  it('the trees view follows hot reload: a refused change shows its errors, an installed one its new version', async () => {
    const page = await Page.open(svc.port);
    const from = page.got.length;
    page.send({ t: 'trees' });
    const before = (await page.until((m) => m.t === 'trees', from)).trees as Array<{ name: string; version: string; errors: unknown[] }>;
    expect(before.find((t) => t.name === 'walker')).toMatchObject({ version: expect.stringMatching(/^v1 · /), errors: [] });
    const bad = await http(svc.base, 'PUT', '/v1/trees/walker', { root: { type: 'sequnce', children: [] } });
    expect(bad.status).toBe(422);
    const mark = page.got.length;
    page.send({ t: 'trees' });
    const refused = (await page.until((m) => m.t === 'trees', mark)).trees as Array<{ name: string; version: string; errors: Array<{ message: string }> }>;
    const walker = refused.find((t) => t.name === 'walker')!;
    expect(walker.version).toMatch(/^v1 · /);
    expect(walker.errors[0]?.message).toMatch(/unknown node type 'sequnce'/);
    expect((await http(svc.base, 'PUT', '/v1/trees/walker', WALKER.root.children[1] === undefined ? WALKER : { ...WALKER, description: 'v2' })).status).toBe(200);
    const last = page.got.length;
    page.send({ t: 'trees' });
    const installed = (await page.until((m) => m.t === 'trees', last)).trees as Array<{ name: string; version: string; errors: unknown[] }>;
    expect(installed.find((t) => t.name === 'walker')).toMatchObject({ version: expect.stringMatching(/^v2 · /), errors: [] });
    await page.close();
  });
});
