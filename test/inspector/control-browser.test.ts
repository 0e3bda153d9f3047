// The inspector's control as a person uses it, in a real browser (Debian's chromium) against a real service
// with control on: pick a node, break on it, see the held lockstep tick's banner, release it; force a node.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CanopyClient } from '../../src/client/index.js';
import { webRoot } from '../../src/inspector/static.js';
import { start, writeFixture, type Running } from '../service/harness.js';
import { hasChromium, node, openBrowser } from './browser.js';

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
const UNTIL = { timeout: 15_000 };

describe.skipIf(!hasChromium)('inspector control in the browser', () => {
  let fixture: Awaited<ReturnType<typeof writeFixture>>;
  let svc: Running;
  let game: CanopyClient;
  let tick = 0;
  const step = () => {
    tick++;
    return game.lockstep({ tick, time: tick * 0.1, agents: [[1, 80]] });
  };
  const act = (d: { actions: ReadonlyArray<readonly unknown[]> }): unknown => d.actions[0]?.find((x) => x === 'flee' || x === 'patrol');

  beforeAll(async () => {
    if (!existsSync(join(webRoot(), 'index.html'))) throw new Error('the inspector page is not built: run `npm run build` first');
    fixture = await writeFixture({ guard: GUARD });
    svc = await start({ trees: fixture.trees, workers: 1, inspectorControl: true });
    game = await CanopyClient.connect(svc.wsUrl, { mode: 'lockstep', fields: ['hp'], reconnect: false });
    await game.spawn([{ id: 1, tree: 'guard' }]);
    await step();
  });
  afterAll(async () => {
    await game?.close();
    await svc?.close();
    await fixture?.remove();
  });

  it('breaks on a node, shows the held tick, releases it, and forces a condition', async () => {
    const browser = await openBrowser();
    const { page } = browser;
    try {
      await page.goto(`${svc.base}/inspector#/session/${game.session}/agent/1`);
      await page.getByText("Waiting for the agent's next tick…").waitFor(UNTIL);
      await step();
      await node(page, 'patrol').waitFor(UNTIL);
      await node(page, 'patrol').click();
      await page.locator('.control-bar button.break').click();
      await expect.poll(() => page.locator('.control-bar button.break').textContent(), UNTIL).toBe('remove break');
      let settled = false;
      const held = step().then((d) => {
        settled = true;
        return d;
      });
      const banner = page.locator('.paused-banner');
      await banner.waitFor(UNTIL);
      expect(await banner.textContent()).toContain(`paused at tick ${tick}`);
      expect(settled).toBe(false);
      // CANOPY_SCREENSHOTS=1: the README's picture of a held tick (as inspector.test.ts writes the others).
      if (process.env.CANOPY_SCREENSHOTS === '1') await page.screenshot({ path: join(import.meta.dirname, '..', '..', 'docs', 'img', 'inspector-control.png') });
      await banner.locator('button.release').click();
      expect(act(await held)).toBe('patrol');
      await banner.waitFor({ state: 'detached', ...UNTIL });
      await page.locator('.control-bar button.break').click(); // remove the breakpoint
      await expect.poll(() => page.locator('.control-bar button.break').textContent(), UNTIL).toBe('break here');

      await node(page, 'low').click();
      await page.locator('.control-bar button.force', { hasText: 'force success' }).click();
      await expect.poll(() => page.locator('.control-bar button.force.on').textContent(), UNTIL).toBe('force success');
      expect(act(await step())).toBe('flee');
      await expect.poll(() => node(page, 'low').getAttribute('class'), UNTIL).toContain('forced');
    } finally {
      await browser.close();
    }
    // The browser closed: the force went with it.
    await expect.poll(async () => act(await step()), UNTIL).toBe('patrol');
  });
});
