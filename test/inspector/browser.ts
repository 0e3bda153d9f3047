// Browser harness for the inspector's end-to-end tests: Debian's chromium driven by playwright-core,
// headless, a fresh profile per browser, and helpers that read what a person sees (colours, text).

import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
/**
 * Browser tests skip on a machine without Debian's chromium (README), except in CI (`CI=true`), where
 * .ci/run installs it: there a missing browser fails the run instead of hiding the tests.
 */
export const hasChromium = existsSync(CHROMIUM) || process.env['CI'] === 'true';

/** A fresh headless chromium with its own profile folder, removed on close. */
export async function openBrowser(): Promise<{ context: BrowserContext; page: Page; close(): Promise<void> }> {
  const profile = await mkdtemp(join(tmpdir(), 'canopy-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
    viewport: { width: 1500, height: 1000 },
    deviceScaleFactor: 1,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** The node of the drawn tree whose title reads `title`. */
export function node(page: Page, title: string): Locator {
  return page.locator('svg.graph g.node').filter({ has: page.locator('text.title', { hasText: new RegExp(`^${title}$`) }) });
}

// Runs in the page (the test's tsconfig has no DOM library).
declare function getComputedStyle(el: unknown): { fill: string; stroke: string };

/** The fill colour of a drawn node's box as the browser paints it, `rgb(r, g, b)`. */
export async function fillOf(page: Page, title: string): Promise<string> {
  return node(page, title).locator('rect.box').first().evaluate((el) => getComputedStyle(el).fill);
}

/** The colours of seed 004 as the page's stylesheet paints them. */
export const COLOURS = {
  running: 'rgb(59, 130, 246)',
  deepest: 'rgb(30, 64, 175)',
  success: 'rgb(22, 163, 74)',
  failure: 'rgb(220, 38, 38)',
  idle: 'rgb(75, 85, 99)',
} as const;

/** The stroke (outline) colour of an element as the browser paints it. */
export async function strokeOf(locator: Locator): Promise<string> {
  return locator.evaluate((el) => getComputedStyle(el).stroke);
}
