// The inspector as a person uses it, in a real browser (Debian's chromium via playwright-core) against a
// real service (a worker thread, API keys on) driven by the TypeScript game client in lockstep mode, so
// the test decides every tick. CANOPY_SCREENSHOTS=1 also writes the README's screenshots to docs/img/.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { CanopyClient } from '../../src/client/index.js';
import { webRoot } from '../../src/inspector/static.js';
import { start, writeFixture, type Running } from '../service/harness.js';
import { COLOURS, fillOf, hasChromium, node, openBrowser, strokeOf } from './browser.js';

const KEY = 'inspector-secret';
const SHOTS = process.env.CANOPY_SCREENSHOTS === '1' ? join(import.meta.dirname, '..', '..', 'docs', 'img') : null;

/** flee (guard hp < 30, abort lower) > attack when an enemy is seen > patrol (waits for the game's result). */
const GUARD = {
  description: 'Flees when hurt, shoots a visible enemy, otherwise patrols.',
  blackboard: { patrols: 0 },
  root: {
    type: 'selector',
    name: 'guard',
    children: [
      { type: 'action', name: 'flee', action: 'flee', if: 'self.hp < 30', abort: 'lower' },
      {
        type: 'sequence',
        name: 'attack',
        children: [
          { type: 'condition', name: 'sees enemy', expr: 'self.enemy == true' },
          { type: 'action', name: 'shoot', action: 'shoot', instant: true },
        ],
      },
      {
        type: 'sequence',
        name: 'patrol',
        children: [
          { type: 'set', name: 'count', values: { patrols: 'bb.patrols + 1' } },
          { type: 'action', name: 'walk', action: 'patrol', args: { speed: "'walk'" } },
        ],
      },
    ],
  },
};

/** Every tick, an instant action: a fixed-rate session that keeps the charts moving. */
const TALKER = { root: { type: 'action', name: 'say', action: 'say', instant: true } };

/** The same guard as recorded earlier, fleeing below 50 hp: the current trees (30) would not have fled. */
const OLD_GUARD = JSON.parse(JSON.stringify(GUARD).replace('self.hp < 30', 'self.hp < 50')) as typeof GUARD;

/**
 * Records a lockstep session on the old trees into `recordDir` with a service of its own: Foo loses
 * 6 hp a tick (100 → 40 over ten ticks) and flees from tick 9 (46 < 50).
 */
async function recordOldGame(recordDir: string): Promise<void> {
  const old = await writeFixture({ guard: OLD_GUARD });
  const recorder = await start({ trees: old.trees, workers: 0, record: 'all', recordDir });
  try {
    const game = await CanopyClient.connect(recorder.wsUrl, { mode: 'lockstep', fields: ['hp', 'enemy'], reconnect: false });
    await game.spawn([{ id: 'foo', tree: 'guard', label: 'Blue Team/Warriors/Foo' }, { id: 'bar', tree: 'guard', label: 'Red Team/Bar' }]);
    for (let t = 1; t <= 10; t++) await game.lockstep({ tick: t, time: t * 0.1, agents: [['foo', 100 - 6 * t, false], ['bar', 100, false]] });
    await game.bye();
  } finally {
    await recorder.close();
    await old.remove();
  }
}

const SQUADS = ['Blue Team/Warriors', 'Blue Team/Archers', 'Red Team/Grunts', 'Red Team/Scouts'];
/** Waits for the page: the service is shared with other work, never assume speed. */
const UNTIL = { timeout: 15_000 };

describe.skipIf(!hasChromium)('the inspector in a browser', () => {
  let fixture: Awaited<ReturnType<typeof writeFixture>>;
  let svc: Running;
  let client: CanopyClient;
  let fixed: CanopyClient;
  let tick = 0;
  const hp = new Map<string | number, number>();

  /** One lockstep tick: every agent observes its hp and no enemy. */
  const step = async (): Promise<void> => {
    tick++;
    await client.lockstep({ tick, time: tick * 0.1, agents: [...hp].map(([id, v]) => [id, v, false]) });
  };

  beforeAll(async () => {
    if (!existsSync(join(webRoot(), 'index.html'))) throw new Error('the inspector page is not built: run `npm run build` first');
    fixture = await writeFixture({ guard: GUARD, talker: TALKER });
    const recordDir = join(fixture.dir, 'recordings');
    await recordOldGame(recordDir);
    svc = await start({ trees: fixture.trees, workers: 1, apiKeys: [KEY], recordDir, maxAgents: 200_000 });
    client = await CanopyClient.connect(svc.wsUrl, { apiKey: KEY, mode: 'lockstep', fields: ['hp', 'enemy'], reconnect: false });
    const agents: Array<{ id: string | number; tree: string; label?: string }> = [{ id: 'foo', tree: 'guard', label: 'Blue Team/Warriors/Foo' }];
    for (let i = 0; i < 40; i++) agents.push({ id: `s${i}`, tree: 'guard', label: `${SQUADS[i % 4]}/Unit ${i}` });
    for (let i = 0; i < 2000; i++) agents.push({ id: i, tree: 'guard' });
    const spawned = await client.spawn(agents);
    if (spawned.errors.length > 0) throw new Error(`spawn refused: ${JSON.stringify(spawned.errors)}`);
    for (const a of agents) hp.set(a.id, 80);
    await step();
    fixed = await CanopyClient.connect(svc.wsUrl, { apiKey: KEY, mode: 'fixed', hz: 10, reconnect: false });
    const talkers = await fixed.spawn(Array.from({ length: 50 }, (_, i) => ({ id: i, tree: 'talker', label: `Crowd/Talker ${i}` })));
    if (talkers.errors.length > 0) throw new Error(`spawn refused: ${JSON.stringify(talkers.errors)}`);
  });

  afterAll(async () => {
    await fixed?.close();
    await client?.close();
    await svc?.close();
    await fixture?.remove();
  });

  it('refuses the page and its data stream without an API key', async () => {
    expect((await fetch(`${svc.base}/inspector`)).status).toBe(401);
    expect((await fetch(`${svc.base}/inspector?key=wrong`)).status).toBe(401);
    const ok = await fetch(`${svc.base}/inspector?key=${KEY}`);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('<div id="app">');
    const status = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`ws://127.0.0.1:${svc.port}/v1/inspector/ws`);
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => {
        ws.close();
        resolve(101);
      });
    });
    expect(status).toBe(401);
  });

  it('finds an agent by label, draws it live, shows an abort, travels back and explains a condition', async () => {
    const browser = await openBrowser();
    const { page } = browser;
    try {
      await page.goto(`${svc.base}/inspector?key=${KEY}`);
      await page.locator('.conn', { hasText: 'connected' }).waitFor();
      const paint = await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1);
      console.log(`inspector: first contentful paint ${paint.toFixed(0)} ms after navigation (loopback, shared machine)`);
      // The session, with its agent count.
      const card = page.locator('button.session', { hasText: 'lockstep' });
      await expect.poll(() => card.locator('.session-agents').textContent(), UNTIL).toBe('2,041');
      // The fixed-rate session's figures move: its agents decide every tick.
      const busy = page.locator('button.session', { hasText: '10 Hz' });
      await expect.poll(async () => Number((await busy.locator('.decisions').textContent())?.replace(/[^\d.]/g, '')), UNTIL).toBeGreaterThan(0);
      await card.click();

      // The hierarchy: labels split on '/', unlabelled agents under their tree's name, virtualized.
      await expect.poll(() => page.locator('.count').textContent(), UNTIL).toBe('2,041 of 2,041 agents');
      const groups = await page.locator('.row.group').allTextContents();
      expect(groups).toEqual(expect.arrayContaining(['▾Blue Team21', '▾Red Team20', '▸guard2,000']));
      expect(await page.locator('.row').count()).toBeLessThan(120);

      // Search by label, pick the agent.
      await page.locator('.filters input').fill('Foo');
      await expect.poll(() => page.locator('.count').textContent(), UNTIL).toBe('1 of 2,041 agents');
      await page.locator('.row.agent', { hasText: 'Foo' }).click();
      await page.getByText("Waiting for the agent's next tick…").waitFor();
      expect(await page.locator('h2.agent-label').textContent()).toBe('Blue Team/Warriors/Foo');

      // Patrolling: the walk action is the deepest running node (darkest blue), its branch blue.
      for (let k = 0; k < 4; k++) await step();
      await expect.poll(() => page.locator('.shown-tick').textContent(), UNTIL).toBe(String(tick));
      expect(await fillOf(page, 'walk')).toBe(COLOURS.deepest);
      expect(await fillOf(page, 'patrol')).toBe(COLOURS.running);
      expect(await fillOf(page, 'guard')).toBe(COLOURS.running);
      const patrolTick = tick;

      // Hurt: flee's guard turns true and aborts the lower branch; flee runs, patrol stops being blue.
      hp.set('foo', 10);
      await step();
      await step();
      await step();
      await expect.poll(() => page.locator('.shown-tick').textContent(), UNTIL).toBe(String(tick));
      expect(await fillOf(page, 'flee')).toBe(COLOURS.deepest);
      expect([COLOURS.running, COLOURS.deepest]).not.toContain(await fillOf(page, 'patrol'));
      expect([COLOURS.running, COLOURS.deepest]).not.toContain(await fillOf(page, 'walk'));
      // The abort is on the timeline, with the cancel of the walk it caused.
      const timeline = await page.locator('.timeline').textContent();
      expect(timeline).toContain('flee aborted (lower)');
      expect(timeline).toMatch(/cancel seq \d+ \(walk\)/);
      // Filter the hierarchy by what agents decided since the page showed the session: only Foo chose flee.
      const doing = page.locator('select.doing');
      await doing.focus();
      await expect.poll(() => doing.locator('option[value="action:flee"]').count(), UNTIL).toBe(1);
      await page.locator('.filters input').fill('');
      await doing.selectOption('action:flee');
      await expect.poll(() => page.locator('.count').textContent(), UNTIL).toBe('1 of 2,041 agents');
      expect(await page.locator('.row.agent').allTextContents()).toEqual(['Foo#foo']);
      await doing.selectOption('');
      await page.locator('.filters input').fill('Foo');

      // Go back to the abort's tick: the flee node carries the abort mark.
      await page.getByTitle('Previous tick').click();
      await page.getByTitle('Previous tick').click();
      await expect.poll(() => page.locator('.shown-tick').textContent(), UNTIL).toBe(String(tick - 2));
      expect(await node(page, 'flee').locator('text.flag').textContent()).toBe('⚡ abort');
      if (SHOTS !== null) await page.screenshot({ path: join(SHOTS, 'inspector-tree.png') });

      // One more step back: three ticks before the newest, the agent was still patrolling.
      await page.getByTitle('Previous tick').click();
      await expect.poll(() => page.locator('.shown-tick').textContent(), UNTIL).toBe(String(tick - 3));
      expect(tick - 3).toBe(patrolTick);
      expect(await fillOf(page, 'walk')).toBe(COLOURS.deepest);
      expect([COLOURS.running, COLOURS.deepest]).not.toContain(await fillOf(page, 'flee'));
      expect(await page.locator('.live').textContent()).toBe('back to live');
      if (SHOTS !== null) await page.locator('.main').screenshot({ path: join(SHOTS, 'inspector-time-travel.png') });

      // The why of that tick: flee's guard was false because hp was 80.
      const why = page.locator('.check', { hasText: 'flee' });
      await expect.poll(() => why.locator('.chain').textContent(), UNTIL).toBe('self.hp < 30 → 80 < 30 → false');
      await why.locator('summary').click();
      expect(await why.locator('.terms').first().textContent()).toContain('self.hp = 80');
      if (SHOTS !== null) {
        await page.locator('.panels').scrollIntoViewIfNeeded();
        await page.screenshot({ path: join(SHOTS, 'inspector-why.png') });
      }

      // Back to live: the newest tick again.
      await page.locator('.live').click();
      await expect.poll(() => page.locator('.shown-tick').textContent(), UNTIL).toBe(String(tick));
      expect(await fillOf(page, 'flee')).toBe(COLOURS.deepest);

      // Node activity over the recorded past: walk ran on the four patrolling ticks, flee on the three since.
      const activity = (name: string) => page.locator('.activity tbody tr').filter({ has: page.locator('th', { hasText: new RegExp(`^${name}$`) }) });
      expect((await activity('walk').locator('td').nth(1).textContent())?.trim()).toBe('4');
      expect((await activity('flee').locator('td').nth(1).textContent())?.trim()).toBe('3');
      // Node search highlights the matches.
      await page.locator('.node-search').fill('flee');
      expect(await page.locator('svg.graph g.node.found text.title').allTextContents()).toEqual(['flee']);

      // Every loaded tree, drawn on its own with its version.
      await page.locator('nav button', { hasText: 'Trees' }).click();
      await page.locator('.trees-view h2', { hasText: 'guard' }).waitFor();
      expect(await page.locator('.trees-view .agent-head .mono').textContent()).toMatch(/^version \S+/);
      expect(await node(page, 'sees enemy').count()).toBe(1);
      expect(await node(page, 'sees enemy').locator('text.detail').first().textContent()).toBe('expr: self.enemy == true');
      if (SHOTS !== null) await page.screenshot({ path: join(SHOTS, 'inspector-trees.png') });

      // The whole page: every agent in the hierarchy, the watched one drawn live.
      await page.locator('nav button', { hasText: 'Live' }).click();
      await page.locator('.filters input').fill('');
      await expect.poll(() => page.locator('.count').textContent(), UNTIL).toBe('2,041 of 2,041 agents');
      if (SHOTS !== null) {
        // Only for the picture: let the charts gather a few seconds of samples.
        await new Promise((resolve) => setTimeout(resolve, 6000));
        await page.screenshot({ path: join(SHOTS, 'inspector-hierarchy.png') });
      }
    } finally {
      await browser.close();
    }
  });

  it('opens a recording, scrubs an agent through it, explains a tick and marks a what-if divergence', async () => {
    const browser = await openBrowser();
    const { page } = browser;
    try {
      await page.goto(`${svc.base}/inspector?key=${KEY}`);
      await page.locator('nav button', { hasText: 'Recordings' }).click();
      const listed = page.locator('button.recording');
      await expect.poll(() => listed.count(), UNTIL).toBe(1);
      await listed.click();
      await expect.poll(() => page.locator('.rec-head .dim').first().textContent(), UNTIL).toMatch(/^ticks 1–10/);
      await expect.poll(() => page.locator('.count').textContent(), UNTIL).toBe('2 of 2 agents');
      await page.locator('.row.agent', { hasText: 'Foo' }).click();

      // Any tick: step to tick 9, where the recorded trees made Foo flee (46 < 50).
      await expect.poll(() => page.locator('.shown-tick').textContent(), UNTIL).toBe('2');
      for (let k = 0; k < 7; k++) await page.getByTitle('Next tick').click();
      await expect.poll(() => page.locator('.shown-tick').textContent(), UNTIL).toBe('9');
      expect(await fillOf(page, 'flee')).toBe(COLOURS.deepest);
      const why = page.locator('.check', { hasText: 'flee' });
      await expect.poll(() => why.locator('.chain').textContent(), UNTIL).toBe('self.hp < 50 → 46 < 50 → true');
      // One tick earlier it was still patrolling.
      await page.getByTitle('Previous tick').click();
      await expect.poll(() => page.locator('.shown-tick').textContent(), UNTIL).toBe('8');
      expect(await fillOf(page, 'walk')).toBe(COLOURS.deepest);

      // What-if against the current trees (flee below 30): Foo would not have fled; the divergence is outlined.
      await page.getByText('Run what-if against the current trees').click();
      await expect.poll(() => page.locator('.whatif-summary').textContent(), UNTIL).toBe('1 of 2 agents decide differently');
      await page.locator('button.change', { hasText: 'Foo' }).click();
      await expect.poll(() => page.locator('.shown-tick').textContent(), UNTIL).toBe('9');
      expect(await page.locator('.diverged').textContent()).toContain('decisions change from tick 9');
      const marked = page.locator('svg.graph g.node.marked');
      expect(await marked.count()).toBe(1);
      expect(await strokeOf(marked.locator('rect.box'))).toBe('rgb(232, 121, 249)');
      if (SHOTS !== null) await page.screenshot({ path: join(SHOTS, 'inspector-recording.png') });
    } finally {
      await browser.close();
    }
  });

  it('stays usable with 100,000 agents in a session: counts, search, only the visible rows in the page', async () => {
    const crowd = await CanopyClient.connect(svc.wsUrl, { apiKey: KEY, mode: 'lockstep', reconnect: false });
    const browser = await openBrowser();
    const { page } = browser;
    try {
      const N = 100_000;
      for (let from = 0; from < N; from += 5000) {
        const batch = Array.from({ length: 5000 }, (_, k) => {
          const i = from + k;
          return { id: i, tree: 'guard', label: `Team ${i % 4}/Squad ${i % 50}/Unit ${i}` };
        });
        const out = await crowd.spawn(batch);
        expect(out.errors).toEqual([]);
      }
      await page.goto(`${svc.base}/inspector?key=${KEY}`);
      const card = page.locator('button.session', { hasText: '100,000' });
      await card.waitFor(UNTIL);
      const clicked = performance.now();
      await card.click();
      await expect.poll(() => page.locator('.count').textContent(), UNTIL).toBe('100,000 of 100,000 agents');
      console.log(`inspector: 100,000 agents listed and grouped ${(performance.now() - clicked).toFixed(0)} ms after the click (shared machine)`);
      // Four teams of 25,000 (collapsed: larger than 200), each with 50 squads.
      expect(await page.locator('.row.group').allTextContents()).toEqual(['▸Team 025,000', '▸Team 125,000', '▸Team 225,000', '▸Team 325,000']);
      await page.locator('.row.group', { hasText: 'Team 3' }).click();
      expect(await page.locator('.row.group', { hasText: 'Squad 47' }).textContent()).toBe('▸Squad 471,000');

      // A search opens every group: 11,111 matches; the page holds only the rows on screen.
      await page.locator('.filters input').fill('Unit 9');
      await expect.poll(() => page.locator('.count').textContent(), UNTIL).toBe('11,111 of 100,000 agents');
      expect(await page.locator('.row').count()).toBeLessThan(120);
      await page.locator('.rows').evaluate((el) => el.scrollTo(0, el.scrollHeight));
      await expect.poll(() => page.locator('.row.agent').last().textContent(), UNTIL).toMatch(/^Unit 9\d*#\d+$/);
      expect(await page.locator('.row').count()).toBeLessThan(120);
    } finally {
      await browser.close();
      await crowd.close();
    }
  });
});
