// The README's quickstart, done the README's way: pack the client package (`npm run pack:client`),
// install the tarball into a scratch project, run the quickstart verbatim (only the URL differs)
// with plain `node` against a real service with the bundled trees, and compare everything it prints;
// then type-check the same program as strict TypeScript against the package's declarations.

import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { start, type Running } from './service/harness.js';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '..');
const NPM_FLAGS = ['--prefer-offline', '--no-audit', '--no-fund'];

/** The README's fenced code blocks, in order. */
async function readmeBlocks(): Promise<Array<{ lang: string; body: string }>> {
  const readme = await readFile(join(root, 'README.md'), 'utf8');
  return [...readme.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map(([, lang, body]) => ({ lang: lang!, body: body! }));
}

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

  it('the client installs the way the quickstart says, with only its own dependencies, and the quickstart prints what the README says', async () => {
    const blocks = await readmeBlocks();
    const client = JSON.parse(await readFile(join(root, 'packages/client/package.json'), 'utf8')) as { name: string; version: string; dependencies: Record<string, string> };
    const tarball = `${client.name.replace(/^@/, '').replace('/', '-')}-${client.version}.tgz`;

    // The README's install commands, as written there.
    const install = blocks.find((b) => b.lang === 'sh' && b.body.includes('npm run pack:client'))!.body;
    expect(install).toContain(`npm ci && npm run pack:client`);
    expect(install).toContain(`writes ${tarball}`);
    expect(install).toContain(`npm install /path/to/canopy/${tarball}`);

    // The client needs the protocol's two libraries and nothing of the service.
    expect(Object.keys(client.dependencies).toSorted()).toEqual(['msgpackr', 'ws']);

    // `npm run pack:client` (the tarball goes to the scratch folder rather than the checkout).
    const packs = join(dir, 'packs');
    await mkdir(packs);
    await run('npm', ['run', 'pack:client', '--', '--pack-destination', packs], { cwd: root, timeout: 120_000 });
    expect(await readdir(packs)).toEqual([tarball]);
    // It holds the compiled client and protocol, nothing of the service or the engine.
    const { stdout: listing } = await run('tar', ['-tzf', join(packs, tarball)]);
    const shipped = listing.split('\n').filter((f) => f !== '');
    expect(shipped.filter((f) => !/^package\/(package\.json|README\.md|dist\/(client|protocol)\/[\w-]+\.(js|d\.ts))$/.test(f))).toEqual([]);
    expect(shipped).toContain('package/dist/client/index.js');

    // `npm install <tarball>` in a fresh project.
    const project = join(dir, 'game');
    await mkdir(project);
    await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'my-game-server', version: '1.0.0', private: true }));
    await run('npm', ['install', join(packs, tarball), ...NPM_FLAGS], { cwd: project, timeout: 120_000 });
    const lock = JSON.parse(await readFile(join(project, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
    const installed = Object.keys(lock.packages)
      .filter((p) => p !== '')
      .map((p) => p.replace(/^.*node_modules\//, ''));
    expect(installed).toContain('@canopy-bt/client');
    // ws, msgpackr and msgpackr's optional native add-on (with its helpers); no fastify, pino, …
    const allowed = /^(@canopy-bt\/client|ws|msgpackr|msgpackr-extract|@msgpackr-extract\/.*|node-gyp-build-optional-packages|detect-libc)$/;
    expect(installed.filter((name) => !allowed.test(name))).toEqual([]);

    // The quickstart verbatim, but for the service's address.
    const program = blocks.find((b) => b.lang === 'js' && b.body.startsWith('// quickstart.mjs'))!.body;
    const expected = blocks[blocks.findIndex((b) => b.body === program) + 1]!.body;
    expect(program).toContain("'ws://localhost:8080/v1/ws'");
    await writeFile(join(project, 'quickstart.mjs'), program.replace('ws://localhost:8080', `ws://127.0.0.1:${server.port}`));
    const { stdout, stderr } = await run(process.execPath, ['quickstart.mjs'], { cwd: project, timeout: 30_000 });
    expect(stderr).toBe('');
    expect(stdout).toBe(expected);

    // The same program type-checks as strict TypeScript against the package's declarations.
    await writeFile(join(project, 'quickstart.mts'), program);
    const tsc = join(root, 'node_modules/.bin/tsc');
    const flags = ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2023'];
    await run(tsc, [...flags, '--typeRoots', join(root, 'node_modules/@types'), '--types', 'node', 'quickstart.mts'], { cwd: project, timeout: 60_000 });
  }, 240_000);
});
