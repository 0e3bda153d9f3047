// The docs agree with the service: the README's raw-protocol exchange and protocol.md §8's bytes are
// replayed against a real service, node counts are counted by the engine, the headline quotes the
// benchmark table, and every repository path the docs link to or name exists.

import { existsSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket, type RawData } from 'ws';
import { NodeCatalog, compileTree, type TreeDefinition } from '../src/bt/index.js';
import { decode, encode } from '../src/protocol/index.js';
import { start, type Running } from './service/harness.js';

const root = resolve(import.meta.dirname, '..');
const read = (path: string): Promise<string> => readFile(join(root, path), 'utf8');

/** A socket that hands out every received frame's raw bytes in order. */
async function open(url: string): Promise<{ send(bytes: Uint8Array): void; next(): Promise<Buffer>; closed: Promise<number>; close(): void }> {
  const socket = new WebSocket(url);
  const frames: Buffer[] = [];
  let wake: (() => void) | undefined;
  socket.on('message', (data: RawData) => {
    frames.push(Buffer.isBuffer(data) ? data : Buffer.concat(data as Buffer[]));
    wake?.();
  });
  const closed = new Promise<number>((done) => socket.once('close', (code) => (done(code), wake?.())));
  await new Promise((done, fail) => socket.once('open', done).once('error', fail));
  return {
    send: (bytes) => socket.send(bytes),
    async next() {
      while (frames.length === 0) {
        if (socket.readyState === WebSocket.CLOSED) throw new Error('socket closed');
        await new Promise<void>((done) => (wake = done));
      }
      return frames.shift()!;
    },
    closed,
    close: () => socket.close(),
  };
}

const hex = (bytes: Uint8Array): string => [...bytes].map((b) => b.toString(16).padStart(2, '0')).join(' ');
const bytes = (text: string): Buffer => Buffer.from(text.trim().split(/\s+/).map((h) => Number.parseInt(h, 16)));

describe('docs agree with the service', () => {
  let server: Running;
  beforeAll(async () => {
    server = await start({ trees: join(root, 'trees'), workers: 1 });
  });
  afterAll(async () => {
    await server.close();
  });

  it("README's raw protocol exchange: every frame the service sends is the one shown", async () => {
    const readme = await read('README.md');
    const section = readme.slice(readme.indexOf('### Other languages'));
    const block = /```\n([\s\S]*?)```/.exec(section)![1]!;
    const socket = await open(`ws://127.0.0.1:${server.port}/v1/ws`);
    const types: Array<[shown: string, got: unknown]> = [];
    const exact: Array<[shown: unknown, got: unknown]> = [];
    for (const line of block.split('\n').filter((l) => /^[→←] /.test(l))) {
      const text = line.slice(2);
      let shown: Record<string, unknown> | undefined;
      try {
        // oxlint-disable-next-line no-new-func -- the README's own examples, written as JS object literals
        shown = new Function(`return (${text});`)() as Record<string, unknown>;
      } catch {
        shown = undefined; // elided (`…`): only its type is compared
      }
      if (line.startsWith('→')) socket.send(encode(shown!));
      else {
        const got = decode(await socket.next()) as Record<string, unknown>;
        types.push([/t:"(\w+)"/.exec(text)![1]!, got.t]);
        if (shown !== undefined) exact.push([shown, got]);
      }
    }
    expect(types.map(([, got]) => got)).toEqual(types.map(([shown]) => shown));
    expect(exact.length).toBeGreaterThanOrEqual(2); // spawned and decisions, field for field
    expect(exact.map(([, got]) => got)).toEqual(exact.map(([shown]) => shown));
    socket.close();
  });

  it('protocol.md §8: the example bytes decode to the frames shown, and the service answers with exactly those bytes', async () => {
    const doc = await read('docs/protocol.md');
    const section = doc.slice(doc.indexOf('## 8. '), doc.indexOf('## 9. '));
    const blocks = [...section.matchAll(/```\n([\s\S]*?)```/g)].map((m) => m[1]!.replace(/\s+/g, ' ').trim()).filter((b) => /^[0-9a-f]{2}( |$)/.test(b));
    const [hello, welcome, spawn, snapshot, decisions] = blocks;
    const inline = (t: string): { frame: unknown; bytes: Buffer } => {
      const m = new RegExp(`\`(\\{"t": "${t}"[^\`]*\\})\`\\s*\\(\`([0-9a-f ]+)\`\\)`).exec(section)!;
      return { frame: JSON.parse(m[1]!), bytes: bytes(m[2]!) };
    };
    const spawned = inline('spawned');
    const result = inline('result');
    const bye = inline('bye');
    for (const { frame, bytes: b } of [spawned, result, bye]) expect(decode(b)).toEqual(frame);
    expect(decode(bytes(decisions!))).toEqual(JSON.parse(/= `(\{"t": "decisions"[^`]*\})`/.exec(section)![1]!));
    expect(decode(bytes(spawn!))).toEqual(JSON.parse(/Spawn: `(\{[^`]*\})`/.exec(section)![1]!));
    expect(decode(bytes(hello!))).toEqual(JSON.parse(/`(\{"t": "hello"[^`]*\})`/.exec(section)![1]!));
    expect(decode(bytes(snapshot!))).toEqual(JSON.parse(/`(\{"t": "snapshot"[^`]*\})`/.exec(section)![1]!));

    const socket = await open(`ws://127.0.0.1:${server.port}/v1/ws`);
    socket.send(bytes(hello!));
    // welcome: a map of at least 8 entries (the service may add some), then the bytes shown up to
    // the session id, whose length (str8 of 36) is shown but whose value differs per session.
    const got = await socket.next();
    const [header, ...shownWelcome] = welcome!.replace(/ …$/, '').split(' ');
    expect(header).toBe('88');
    expect(got[0]).toBeGreaterThanOrEqual(0x88);
    expect(got[0]).toBeLessThanOrEqual(0x8f);
    expect(hex(got.subarray(1, 1 + shownWelcome.length))).toBe(shownWelcome.join(' '));
    socket.send(bytes(spawn!));
    expect(hex(await socket.next())).toBe(hex(spawned.bytes));
    socket.send(bytes(snapshot!));
    expect(hex(await socket.next())).toBe(decisions);
    socket.send(result.bytes);
    socket.send(bye.bytes);
    expect(await socket.closed).toBe(1000);
  });
});

describe('docs agree with the code', () => {
  it("the README's headline quotes the engine table's Canopy row", async () => {
    const readme = await read('README.md');
    const [, headRate, headRatio] = /~([\d.]+) M agent-ticks\/s on one core for the benchmark's guard tree, (\d+)× mistreevous/.exec(readme)!;
    const [, rate, ratio] = /\| \*\*Canopy\*\* \| \*\*([\d.]+)\*\* \| \*\*(\d+)×\*\* \|/.exec(readme)!;
    expect(headRatio).toBe(ratio);
    expect(Math.abs(Number(headRate) - Number(rate)) / Number(rate)).toBeLessThan(0.05);
  });

  it('node counts in the README are the engine’s', async () => {
    const readme = await read('README.md');
    const count = async (path: string): Promise<number> => {
      const def = JSON.parse(await read(path)) as TreeDefinition;
      return compileTree('tree', () => def, new NodeCatalog()).nodeCount;
    };
    expect(readme).toContain(`Reference guard tree \`bench/trees/guard.json\``);
    expect(readme).toContain(`; ${await count('bench/trees/guard.json')} nodes`);
    expect(readme).toContain(`${await count('trees/guard.json')}-node \`trees/guard.json\``);
    expect(readme).toContain(`Canopy, ${await count('bench/trees/large.json')}-node tree`);
  });

  it('every link and every repository path named in README.md and docs/*.md exists', async () => {
    const files = ['README.md', ...(await readdir(join(root, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    const missing: string[] = [];
    for (const file of files) {
      const text = await read(file);
      for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue; // http:, mailto:
        if (!existsSync(resolve(root, dirname(file), target!))) missing.push(`${file}: link ${target}`);
      }
      for (const [, path] of text.matchAll(/`((?:src|docs|trees|bench|test|scripts|packages|spec)\/[\w./-]*)`/g)) {
        if (!existsSync(join(root, path!))) missing.push(`${file}: \`${path}\``);
      }
    }
    expect(missing).toEqual([]);
  });

  it("every production dependency that does not admit the declared Node minimum is explained in the README (npm's EBADENGINE)", async () => {
    const pkg = JSON.parse(await read('package.json')) as { engines: { node: string } };
    const lock = JSON.parse(await read('package-lock.json')) as { packages: Record<string, { version?: string; dev?: boolean; engines?: { node?: string } | string[] }> };
    const minimum = version(/^>=\s*([\d.]+)$/.exec(pkg.engines.node)![1]!);
    const excluding = Object.entries(lock.packages)
      .filter(([path, p]) => path !== '' && p.dev !== true && !Array.isArray(p.engines) && p.engines?.node !== undefined && !admits(p.engines.node, minimum))
      .map(([path, p]) => `${path.replace(/^.*node_modules\//, '')}@${p.version}`);
    const readme = await read('README.md');
    expect(excluding.filter((name) => !readme.includes(`EBADENGINE … ${name} requires node`))).toEqual([]);
  });

  it('the README does not ask for `docker run --init` on an image whose PID 1 is already tini', async () => {
    const [readme, dockerfile] = await Promise.all([read('README.md'), read('Dockerfile')]);
    expect(dockerfile).toMatch(/^ENTRYPOINT \["\/usr\/bin\/tini"/m);
    expect(readme).not.toMatch(/docker run[^\n`]*--init/);
  });
});

/** `20.19` → [20, 19, 0]; `x` and missing parts are 0. */
function version(text: string): number[] {
  const parts = text.split('.').map((p) => Number.parseInt(p, 10) || 0);
  return [parts[0] ?? 0, parts[1] ?? 0, parts[2] ?? 0];
}

/** Whether an engines range (`>=X`, `^X`, `X`, joined by spaces and `||`) admits a version. */
function admits(range: string, v: number[]): boolean {
  const cmp = (a: number[], b: number[]): number => a[0]! - b[0]! || a[1]! - b[1]! || a[2]! - b[2]!;
  return range.split('||').some((alternative) =>
    [...alternative.matchAll(/(>=|\^|>|<=|<)?\s*(\d[\w.]*)/g)].every(([, op, ver]) => {
      const w = version(ver!);
      if (op === '>=') return cmp(v, w) >= 0;
      if (op === '>') return cmp(v, w) > 0;
      if (op === '<=') return cmp(v, w) <= 0;
      if (op === '<') return cmp(v, w) < 0;
      if (op === '^') return v[0] === w[0] && cmp(v, w) >= 0;
      return v[0] === w[0]; // a bare major
    }),
  );
}
