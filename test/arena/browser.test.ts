// The arena in a real browser (Debian chromium, headless): the page draws NPCs that move between two
// screenshots, and clicking one opens its inspection in Canopy. ARENA_SCREENSHOT=<file> saves the
// README's picture (docs/img/arena.png).

import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, startBoth, type Running } from './harness.js';

const CHROMIUM = '/usr/bin/chromium';
/** As the inspector's browser tests: skipped on a machine without Debian's chromium, never in CI (`CI=true`). */
const hasChromium = existsSync(CHROMIUM) || process.env['CI'] === 'true';

/** What the tests read of the page (its `window.arena` hook and the canvas); no DOM types in the test project. */
interface Win {
  arena: { tick(): number; count(): number; hovered(): number; npcOnScreen(i: number): [number, number] };
  document: { querySelector(s: 'canvas'): { width: number; height: number; getContext(k: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } } } };
}

describe.skipIf(!hasChromium)('arena in the browser (needs /usr/bin/chromium)', () => {
  let run: Running;
  let browser: Browser;
  let page: Page;
  let profile: string;
  beforeAll(async () => {
    // The page is built like `npm run demo` builds it (its own Vite config, its own output folder).
    await build({ configFile: join(REPO, 'examples/arena/vite.config.ts'), logLevel: 'silent' });
    run = await startBoth(300, join(REPO, 'examples/arena/dist'));
    profile = mkdtempSync(join(tmpdir(), 'arena-chromium-'));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
      viewport: { width: 1280, height: 800 },
    });
    browser = context.browser()!;
    page = context.pages()[0] ?? (await context.newPage());
    await page.goto(run.arena.url);
  }, 60_000);
  afterAll(async () => {
    await page?.context().close();
    await browser?.close();
    await run?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  const tick = (): Promise<number> => page.evaluate(() => (globalThis as unknown as Win).arena.tick());

  it('draws NPCs that move between two screenshots', async () => {
    // The page sets its hook once it has joined the room (a top-level await). Until then `window.arena` is the
    // page's <canvas id="arena"> (named access to elements by id), which has no `tick`.
    await page.waitForFunction(
      () => {
        const hook = (globalThis as unknown as Partial<Win>).arena;
        return typeof hook?.tick === 'function' && hook.tick() > 0;
      },
      undefined,
      { timeout: 20_000 },
    );
    expect(await page.evaluate(() => (globalThis as unknown as Win).arena.count())).toBe(300);
    const first = await page.locator('canvas').screenshot();
    const t0 = await tick();
    // Two seconds of game time later (frames carry the room's tick).
    await page.waitForFunction((t) => (globalThis as unknown as Win).arena.tick() >= t + 40, t0, { timeout: 20_000 });
    const second = await page.locator('canvas').screenshot();
    expect(first.equals(second)).toBe(false);
    // The canvas holds NPC colours, not just the floor: count pixels of the action palette.
    const coloured = await page.evaluate(() => {
      const c = (globalThis as unknown as Win).document.querySelector('canvas');
      const data = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let k = 0; k < data.length; k += 4) if (data[k + 1]! > 150 && data[k]! < 120) n++; // the moveTo green
      return n;
    });
    expect(coloured).toBeGreaterThan(50);
    if (process.env.ARENA_SCREENSHOT) {
      // The README's picture: after 15 s of game time, when raiders have reached the NPCs.
      await page.waitForFunction((t) => (globalThis as unknown as Win).arena.tick() >= t + 300, t0, { timeout: 60_000 });
      writeFileSync(process.env.ARENA_SCREENSHOT, await page.screenshot());
    }
  }, 90_000);

  it('opens the clicked NPC in Canopy', async () => {
    // Aim at NPC 0 (a Red Team grunt); the NPC under the pointer (the page's hover) is the one the click opens.
    const [x, y] = await page.evaluate(() => (globalThis as unknown as Win).arena.npcOnScreen(0));
    await page.mouse.move(x, y);
    const agent = await page.evaluate(() => (globalThis as unknown as Win).arena.hovered());
    expect(agent).toBeGreaterThanOrEqual(0);
    const label = await page.locator('#tip b').innerText();
    const popup = page.context().waitForEvent('page', { timeout: 10_000 });
    await page.mouse.click(x, y);
    const tab = await popup;
    await tab.waitForLoadState();
    const session = run.arena.room.link.session;
    expect(tab.url()).toBe(`${run.canopyHttp}/inspector/#/session/${session}/agent/${agent}`);
    // The inspector watches the agent the tooltip named: its label heads the agent view.
    await expect.poll(() => tab.locator('h2.agent-label').innerText(), { timeout: 15_000 }).toBe(label);
    await tab.close();
  }, 30_000);
});
