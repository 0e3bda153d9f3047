#!/usr/bin/env node
// Replays the Dockerfile's steps outside Docker (no Docker engine runs on CI machines): a clean copy
// per stage, the stage's RUN commands, the runtime stage's production install, then the image's CMD
// with its ENV, polled with the image's own HEALTHCHECK command until healthy, then SIGTERM → clean exit.
// Skipped, and said so: `FROM` (we run on this machine's Node), apt-get lines (tini), USER, ENTRYPOINT.

import { execSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const work = mkdtempSync(join(tmpdir(), 'canopy-image-'));
const log = (msg) => console.log(`[image-check] ${msg}`);

/** Dockerfile → stages of { name, steps: [{ op, args }] } (continuation lines joined, comments dropped). */
function parseDockerfile(text) {
  const lines = text.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  const stages = [];
  for (const line of lines) {
    const [op, ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    if (op.toUpperCase() === 'FROM') {
      const m = /\sAS\s+(\S+)/i.exec(args);
      stages.push({ name: m ? m[1] : String(stages.length), base: args.split(/\s+/)[0], steps: [] });
    } else stages.at(-1).steps.push({ op: op.toUpperCase(), args });
  }
  return stages;
}

/** Parses `["a", "b"]` exec form; the image check insists on exec form (signals reach the process). */
function execForm(args, what) {
  const json = args.replace(/^(--\S+\s+)*(CMD\s+)?/, '');
  try {
    const v = JSON.parse(json);
    if (Array.isArray(v)) return v;
  } catch {}
  throw new Error(`${what} must use exec form (a JSON array), got: ${args}`);
}

const freePort = () =>
  new Promise((res) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });

const stages = parseDockerfile(readFileSync(join(repo, 'Dockerfile'), 'utf8'));
const roots = new Map();
let final;
for (const stage of stages) {
  const root = join(work, stage.name);
  mkdirSync(root, { recursive: true });
  roots.set(stage.name, root);
  const ctx = { root, cwd: root, env: {}, cmd: null, health: null, workdir: '/' };
  const map = (p) => (p.startsWith('/') ? join(root, p) : join(ctx.cwd, p));
  log(`stage ${stage.name} (FROM ${stage.base}: using this machine's ${process.version})`);
  for (const { op, args } of stage.steps) {
    switch (op) {
      case 'WORKDIR':
        ctx.workdir = args;
        ctx.cwd = map(args);
        mkdirSync(ctx.cwd, { recursive: true });
        break;
      case 'ENV':
        for (const [, k, v] of args.matchAll(/(\w+)=(\S+)/g)) ctx.env[k] = v.startsWith('/') ? map(v) : v;
        break;
      case 'COPY': {
        const parts = args.split(/\s+/);
        const from = parts[0].startsWith('--from=') ? parts.shift().slice(7) : null;
        const dest = parts.pop();
        for (const src of parts) {
          const source = from ? join(roots.get(from), src.startsWith('/') ? src : join(ctx.workdir, src)) : join(repo, src);
          const target = dest.endsWith('/') || parts.length > 1 ? join(map(dest), src.split('/').filter(Boolean).pop()) : map(dest);
          cpSync(source, target, { recursive: true });
        }
        break;
      }
      case 'RUN':
        if (/apt-get/.test(args)) {
          log(`skip (system packages): ${args}`);
          break;
        }
        log(`RUN ${args}`);
        execSync(args, { cwd: ctx.cwd, stdio: 'inherit', env: { ...process.env, ...ctx.env } });
        break;
      case 'CMD':
        ctx.cmd = execForm(args, 'CMD');
        break;
      case 'HEALTHCHECK':
        ctx.health = execForm(args.slice(args.indexOf('CMD') + 3).trim(), 'HEALTHCHECK');
        break;
      case 'ENTRYPOINT':
        execForm(args, 'ENTRYPOINT');
        log(`skip ENTRYPOINT ${args} (signal forwarding is checked below by sending SIGTERM to the CMD)`);
        break;
      case 'USER':
      case 'EXPOSE':
      case 'ARG':
      case 'LABEL':
        break;
      default:
        throw new Error(`image-check does not know Dockerfile instruction ${op}`);
    }
  }
  final = ctx;
}

if (!final.cmd || !final.health) throw new Error('the final stage needs CMD and HEALTHCHECK');
for (const dev of ['vitest', 'typescript', 'mistreevous']) {
  if (existsSync(join(final.cwd, 'node_modules', dev))) throw new Error(`devDependency ${dev} is in the production install`);
}
const port = await freePort();
const env = { ...process.env, ...final.env, CANOPY_PORT: String(port), CANOPY_HOST: '127.0.0.1', CANOPY_WORKERS: '2' };
log(`start: ${final.cmd.join(' ')} (port ${port})`);
const child = spawn(final.cmd[0] === 'node' ? process.execPath : final.cmd[0], final.cmd.slice(1), { cwd: final.cwd, env, stdio: ['ignore', 'inherit', 'inherit'] });
const exited = new Promise((res) => child.once('exit', (code, signal) => res({ code, signal })));

let healthy = false;
const deadline = Date.now() + 30_000;
while (Date.now() < deadline && child.exitCode === null) {
  const r = spawnSync(final.health[0] === 'node' ? process.execPath : final.health[0], final.health.slice(1), { env, timeout: 3000 });
  if (r.status === 0) {
    healthy = true;
    break;
  }
  await new Promise((res) => setTimeout(res, 250));
}
if (!healthy) {
  child.kill('SIGKILL');
  throw new Error('the service never became healthy');
}
// The inspector ships in the image: its page and its built script are served.
const inspector = await fetch(`http://127.0.0.1:${port}/inspector`);
const html = await inspector.text();
const script = /src="(\/inspector\/assets\/[^"]+\.js)"/.exec(html)?.[1];
if (inspector.status !== 200 || script === undefined || (await fetch(`http://127.0.0.1:${port}${script}`)).status !== 200) {
  child.kill('SIGKILL');
  throw new Error(`the inspector is not served (GET /inspector: ${inspector.status}; script ${script ?? 'missing'})`);
}
log(`inspector served (${script})`);
log('healthy; sending SIGTERM');
child.kill('SIGTERM');
const { code, signal } = await Promise.race([exited, new Promise((res) => setTimeout(() => res({ code: 'timeout' }), 20_000))]);
if (code !== 0) {
  child.kill('SIGKILL');
  throw new Error(`after SIGTERM the service exited with ${code ?? signal}, expected 0`);
}
rmSync(work, { recursive: true, force: true });
log('ok: built, installed for production, started with the image command, healthy, stopped cleanly');
