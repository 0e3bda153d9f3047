// deploy/nginx.conf, the load balancer of deploy/compose.yaml, in front of two real service
// instances: WebSocket sessions pass through it, spread over both instances without stickiness,
// and an instance that refuses (503) or is gone is skipped without the client noticing. Runs
// Debian's nginx (`nginx-light`, installed by .ci/run); skipped where there is none.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer as createTcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CanopyClient } from '../../src/client/index.js';
import { start, writeFixture, type Running } from '../service/harness.js';

// On the PATH, or where Debian puts it (/usr/sbin is not on every user's PATH).
const NGINX = ['nginx', '/usr/sbin/nginx'].find((cmd) => spawnSync(cmd, ['-v']).error === undefined);

/** A port nothing listens on right now (the kernel's pick, released for nginx to bind). */
async function freePort(): Promise<number> {
  const probe = createTcpServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** Sessions open on an instance, from its /readyz. */
async function sessionsOn(instance: Running): Promise<number> {
  const body = (await (await fetch(`${instance.base}/readyz`)).json()) as { sessions: number };
  return body.sessions;
}

describe.skipIf(NGINX === undefined)('deploy/nginx.conf in front of two instances', () => {
  let fixture: Awaited<ReturnType<typeof writeFixture>>;
  let a: Running;
  let b: Running;
  let dir: string;
  let nginx: ChildProcess;
  let url: string;
  const clients: CanopyClient[] = [];

  beforeAll(async () => {
    fixture = await writeFixture();
    // Instance a takes one connection at most, so the balancer meets its 503 (E_LIMIT) refusal.
    a = await start({ trees: fixture.trees, maxConnections: 1 });
    b = await start({ trees: fixture.trees });
    dir = await mkdtemp(join(tmpdir(), 'canopy-nginx-'));
    const port = await freePort();
    // The shipped file, with the compose service names pointed at the two instances, a local
    // port, and nginx's own files in the temp folder (so it runs without root).
    const conf = (await readFile(new URL('../../deploy/nginx.conf', import.meta.url), 'utf8'))
      .replace('server canopy-a:8080', `server 127.0.0.1:${a.port}`)
      .replace('server canopy-b:8080', `server 127.0.0.1:${b.port}`)
      .replace('listen 8080;', `listen 127.0.0.1:${port};`)
      .replace('http {', `http {\n  access_log off;\n${['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${join(dir, t)};`).join('\n')}`);
    if (!conf.includes(`server 127.0.0.1:${b.port}`) || !conf.includes(`listen 127.0.0.1:${port};`)) throw new Error('deploy/nginx.conf: upstreams or listen line not found');
    await writeFile(join(dir, 'nginx.conf'), conf);
    nginx = spawn(NGINX!, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', `daemon off; pid ${join(dir, 'nginx.pid')}; error_log stderr;`], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    nginx.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<never>((_, reject) => nginx.once('exit', (code) => reject(new Error(`nginx exited (${code}): ${stderr}`))));
    exited.catch(() => {});
    // nginx says nothing once it listens: try the port until it answers (bounded).
    const listening = (async () => {
      for (let i = 0; i < 200; i++) {
        const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false);
        if (ok) return;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error(`nginx did not answer on ${port}: ${stderr}`);
    })();
    await Promise.race([listening, exited]);
    url = `ws://127.0.0.1:${port}/v1/ws`;
  });

  afterAll(async () => {
    for (const c of clients) c.close();
    if (nginx !== undefined && nginx.exitCode === null) {
      const gone = new Promise((r) => nginx.once('exit', r));
      nginx.kill('SIGTERM');
      await gone;
    }
    await a?.close();
    await b?.close();
    await fixture?.remove();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  /** A lockstep session through the balancer, ticked once to show it works. */
  async function session(): Promise<CanopyClient> {
    const client = await CanopyClient.connect(url, { mode: 'lockstep', reconnect: false });
    clients.push(client);
    await client.spawn([{ id: 1, tree: 'talker' }]);
    const d = await client.lockstep({ tick: 1, time: 0.05, agents: { 1: { x: 1 } } });
    expect(d.actions).toHaveLength(1);
    return client;
  }

  it('spreads sessions over both instances, and a refusing instance (503) is skipped without the client noticing', async () => {
    for (let i = 0; i < 4; i++) await session();
    // Round robin: a took the one connection it accepts; its 503s for the others were retried on b.
    expect(await sessionsOn(a)).toBe(1);
    expect(await sessionsOn(b)).toBe(3);
  });

  it('an instance that is gone is skipped too: new sessions land on the other', async () => {
    const before = await sessionsOn(b);
    await a.close();
    for (let i = 0; i < 2; i++) await session();
    expect(await sessionsOn(b)).toBe(before + 2);
  });
});
