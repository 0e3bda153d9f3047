// The README's quickstart is a real program: run it, unchanged but for the import path and port,
// against a real service with the bundled trees and 2 worker threads, and compare its output.

import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { start, type Running } from './service/harness.js';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '..');

describe('README', () => {
  let server: Running;
  let dir: string;
  beforeAll(async () => {
    server = await start({ trees: join(root, 'trees'), workers: 2 });
    dir = await mkdtemp(join(tmpdir(), 'canopy-readme-'));
  });
  afterAll(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the quickstart runs against the bundled trees and prints what the README says', async () => {
    const readme = await readFile(join(root, 'README.md'), 'utf8');
    const blocks = [...readme.matchAll(/```(\w*)\n([\s\S]*?)```/g)];
    const program = blocks.find(([, lang, body]) => lang === 'ts' && body!.startsWith('// quickstart.mts'))![2]!;
    const expected = blocks[blocks.findIndex(([, , body]) => body === program) + 1]![2]!.trim();
    const file = join(dir, 'quickstart.mts');
    await writeFile(
      file,
      program.replace("'canopy/client'", JSON.stringify(join(root, 'src/client/index.ts'))).replace('ws://localhost:8080', `ws://127.0.0.1:${server.port}`),
    );
    const { stdout } = await run(process.execPath, ['--import', 'tsx', file], { cwd: root, timeout: 30_000 });
    const printed = stdout.split('\n').filter((l) => l.startsWith('tick '));
    expect(printed.join('\n')).toBe(expected);
    expect(stdout).toContain("trees [ 'follower', 'guard', 'squad', 'take-cover' ]");
  });
});
