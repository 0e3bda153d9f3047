// The inspector's control (docs/inspector.md "Control") against a real service, real sockets and a real
// worker thread: refused when off or with a key that lacks it; forcing a condition changes the watched
// agent's decisions and not an unwatched agent's on the same tree; a breakpoint holds a lockstep tick's
// decisions until released, and closing the inspector's socket releases it.

import { afterAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { CanopyClient } from '../../src/client/index.js';
import { start, writeFixture, type Running } from '../service/harness.js';

/** Flees when the condition holds (never, with hp 80), else patrols. */
const GUARD = {
  root: {
    type: 'selector',
    name: 'guard',
    children: [
      { type: 'sequence', name: 'hurt', children: [{ type: 'condition', name: 'low', expr: 'self.hp < 30' }, { type: 'action', name: 'flee', action: 'flee', instant: true }] },
      { type: 'action', name: 'patrol', action: 'patrol', instant: true },
    ],
  },
};

type Msg = Record<string, unknown> & { t: string };

/** One inspector page: a raw socket and every message it received. */
class Page {
  readonly got: Msg[] = [];
  private waiters: Array<() => void> = [];
  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.got.push(JSON.parse(String(data)) as Msg);
      for (const w of this.waiters.splice(0)) w();
    });
  }
  static async open(port: number, key?: string): Promise<Page> {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/inspector/ws${key === undefined ? '' : `?key=${key}`}`);
    const page = new Page(ws);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    await page.until((m) => m.t === 'hello');
    return page;
  }
  send(msg: Record<string, unknown>): void {
    this.ws.send(JSON.stringify(msg));
  }
  async until(test: (m: Msg) => boolean, from = 0): Promise<Msg> {
    for (;;) {
      const hit = this.got.slice(from).find(test);
      if (hit !== undefined) return hit;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }
  async close(): Promise<void> {
    const closed = new Promise((resolve) => this.ws.once('close', resolve));
    this.ws.close();
    await closed;
  }
}

const nodeIndex = (watching: Msg, name: string): number => {
  const nodes = (watching.tree as { nodes: Array<{ name: string | null }> }).nodes;
  const i = nodes.findIndex((n) => n.name === name);
  if (i < 0) throw new Error(`no node ${name}`);
  return i;
};

describe('inspector control', () => {
  const running: Running[] = [];
  const clients: CanopyClient[] = [];
  let fixture: Awaited<ReturnType<typeof writeFixture>> | undefined;

  afterAll(async () => {
    for (const c of clients) await c.close();
    for (const s of running) await s.close();
    await fixture?.remove();
  });

  async function service(overrides: Record<string, unknown>): Promise<{ svc: Running; game: CanopyClient }> {
    fixture ??= await writeFixture({ guard: GUARD });
    const svc = await start({ trees: fixture.trees, workers: 1, ...overrides });
    running.push(svc);
    const key = (overrides.apiKeys as string[] | undefined)?.[0];
    const game = await CanopyClient.connect(svc.wsUrl, { mode: 'lockstep', fields: ['hp'], reconnect: false, ...(key === undefined ? {} : { apiKey: key }) });
    clients.push(game);
    const spawned = await game.spawn([{ id: 1, tree: 'guard' }, { id: 2, tree: 'guard' }]);
    expect(spawned.errors).toEqual([]);
    return { svc, game };
  }

  let tick = 0;
  const step = (game: CanopyClient) => {
    tick++;
    return game.lockstep({ tick, time: tick * 0.1, agents: [[1, 80], [2, 80]] });
  };
  const actionsOf = (d: { actions: ReadonlyArray<readonly unknown[]> }, agent: number): unknown[] => d.actions.filter((a) => a[0] === agent).map((a) => a.find((x) => x === 'flee' || x === 'patrol'));

  async function watch(page: Page, session: string, agent: number): Promise<Msg> {
    page.send({ t: 'session', session });
    await page.until((m) => m.t === 'agents');
    page.send({ t: 'watch', agent });
    return page.until((m) => m.t === 'watching');
  }

  it('is refused while CANOPY_INSPECTOR_CONTROL is off (the default)', async () => {
    const { svc, game } = await service({});
    const page = await Page.open(svc.port);
    expect(page.got[0]).toMatchObject({ t: 'hello', control: null });
    await watch(page, game.session, 1);
    for (const msg of [{ t: 'control.force', node: 1, status: 'success' }, { t: 'control.break', node: 1 }, { t: 'heartbeat' }]) {
      const from = page.got.length;
      page.send(msg);
      const err = await page.until((m) => m.t === 'error', from);
      expect(err).toMatchObject({ code: 'E_UNAUTHORIZED', request: msg.t });
      expect(String(err.message)).toContain('CANOPY_INSPECTOR_CONTROL=true');
    }
    await page.close();
  });

  it('is refused with an API key that is not a control key', async () => {
    const { svc, game } = await service({ apiKeys: ['plain', 'boss'], inspectorControl: true, inspectorControlKeys: ['boss'] });
    const plain = await Page.open(svc.port, 'plain');
    expect(plain.got[0]).toMatchObject({ control: null });
    await watch(plain, game.session, 1);
    plain.send({ t: 'control.force', node: 1, status: 'success' });
    expect(await plain.until((m) => m.t === 'error')).toMatchObject({ code: 'E_UNAUTHORIZED', request: 'control.force' });
    const boss = await Page.open(svc.port, 'boss');
    expect(boss.got[0]).toMatchObject({ control: { heartbeatMs: 2000 } });
    await plain.close();
    await boss.close();
  });

  it('forces a condition of the watched agent only, and undoes it when the page closes', async () => {
    const { svc, game } = await service({ inspectorControl: true });
    expect(actionsOf(await step(game), 1)).toEqual(['patrol']);
    const page = await Page.open(svc.port);
    const watching = await watch(page, game.session, 1);
    page.send({ t: 'control.force', node: nodeIndex(watching, 'low'), status: 'success' });
    const state = await page.until((m) => m.t === 'control');
    expect(state.forces).toEqual([{ session: game.session, agent: 1, node: nodeIndex(watching, 'low'), status: 'success' }]);
    const forced = await step(game);
    expect(actionsOf(forced, 1)).toEqual(['flee']);
    expect(actionsOf(forced, 2)).toEqual(['patrol']); // same tree, not watched: unaffected
    const push = await page.until((m) => m.t === 'push' && m.frames !== undefined);
    const frame = (push.frames as { frames: Array<{ tick: number; nodes: Array<{ forced?: boolean }> }> }).frames.find((f) => f.tick === tick)!;
    expect(frame.nodes[nodeIndex(watching, 'low')]!.forced).toBe(true);
    await page.close();
    // The watch ends with the page, and the force with it: the condition runs again.
    await expect.poll(async () => actionsOf(await step(game), 1)).toEqual(['patrol']);
  });

  it('holds a lockstep tick at a breakpoint until released; closing the page releases it', async () => {
    const { svc, game } = await service({ inspectorControl: true });
    await step(game);
    const page = await Page.open(svc.port);
    const watching = await watch(page, game.session, 1);
    page.send({ t: 'control.break', node: nodeIndex(watching, 'patrol') });
    await page.until((m) => m.t === 'control');
    let settled = false;
    const held = step(game).then((d) => {
      settled = true;
      return d;
    });
    const paused = await page.until((m) => m.t === 'control.paused');
    expect(paused).toMatchObject({ session: game.session, tick, agent: 1, node: nodeIndex(watching, 'patrol') });
    // A heartbeat round trip: the decisions are still held after the server answered a later message.
    page.send({ t: 'frames' });
    await page.until((m) => m.t === 'ring');
    expect(settled).toBe(false);
    const from = page.got.length;
    page.send({ t: 'control.release' });
    expect(await page.until((m) => m.t === 'control.released', from)).toMatchObject({ tick });
    expect(actionsOf(await held, 1)).toEqual(['patrol']);

    // The next tick stops again; closing the inspector releases it.
    const again = step(game);
    await page.until((m) => m.t === 'control.paused' && m.tick === tick);
    await page.close();
    expect(actionsOf(await again, 1)).toEqual(['patrol']);
    // No breakpoint is left: the following tick is not held.
    expect(actionsOf(await step(game), 1)).toEqual(['patrol']);
  });

  it('releases everything a page set when its heartbeats stop', { timeout: 30_000 }, async () => {
    const { svc, game } = await service({ inspectorControl: true });
    await step(game);
    const page = await Page.open(svc.port);
    const watching = await watch(page, game.session, 1);
    page.send({ t: 'control.force', node: nodeIndex(watching, 'low'), status: 'success' });
    page.send({ t: 'control.break', node: nodeIndex(watching, 'flee') });
    await page.until((m) => m.t === 'control' && (m.breaks as unknown[]).length === 1);
    const held = step(game);
    await page.until((m) => m.t === 'control.paused');
    // The page stays open but goes silent: after 6 s without a message the tick goes and the force is cleared.
    expect(await page.until((m) => m.t === 'control.expired')).toMatchObject({ message: expect.stringContaining('no heartbeat') });
    expect(actionsOf(await held, 1)).toEqual(['flee']);
    expect(actionsOf(await step(game), 1)).toEqual(['patrol']);
    await page.close();
  });

  it('releases a held tick once its session ends', async () => {
    const { svc, game } = await service({ inspectorControl: true, resumeGraceMs: 0 });
    await step(game);
    const page = await Page.open(svc.port);
    const watching = await watch(page, game.session, 1);
    page.send({ t: 'control.break', node: nodeIndex(watching, 'patrol') });
    await page.until((m) => m.t === 'control');
    page.send({ t: 'heartbeat' });
    const held = step(game).catch(() => 'closed');
    await page.until((m) => m.t === 'control.paused');
    const session = game.session;
    await game.close();
    expect(await held).toBe('closed');
    // The page is still open and controlling: the ended session's tick is let go anyway.
    expect(await page.until((m) => m.t === 'control.released')).toMatchObject({ session });
    await page.close();
  });
});
