// The arena's browser view: joins the Colyseus room, draws every NPC on a canvas coloured by its
// current action with a line to its target, labels on hover, and opens the NPC in Canopy on click.

import { Client, type Room } from '@colyseus/sdk';
import { inspectUrl } from './inspect.js';

interface Setup {
  width: number;
  height: number;
  walls: Array<{ x: number; y: number; w: number; h: number }>;
  cover: Array<[number, number]>;
  labels: string[];
  trees: string[];
  actions: string[];
  session: string;
  canopyHttp: string;
  hz: number;
  you: string;
}

interface Frame {
  tick: number;
  npcs: Uint8Array;
  raiders: number[];
  players: Array<[string, number, number]>;
  hud: { tickP50: number; tickP99: number; lateP50: number; lateP99: number };
}

/** Must match the server's FRAME_STRIDE and QUANT (examples/arena/server/room.ts). */
const STRIDE = 6;
const QUANT = 65534;
const NONE = 0xffff;

/** Colour of each action (by name); the hands' action wins over movement while it runs. */
const COLOURS: Record<string, string> = {
  idle: '#7d8590',
  moveTo: '#4cc38a',
  flee: '#f5b93b',
  crouch: '#a78bfa',
  shoot: '#ff5c5c',
  fire: '#ff5c5c',
  other: '#38bdf8',
};

const canvas = document.getElementById('arena') as HTMLCanvasElement;
const ctx = canvas.getContext('2d')!;
const tip = document.getElementById('tip')!;
const status = document.getElementById('status')!;
const figures = document.getElementById('figures')!;

let setup: Setup | undefined;
let prev: Uint16Array | undefined;
let cur: Uint16Array | undefined;
let curAt = 0;
let frame: Frame | undefined;
let hovered = -1;
let scale = 1;
let offX = 0;
let offY = 0;
/** Screen positions of the NPCs as last drawn (hover, click, and the browser test). */
let screen = new Float32Array(0);

const room: Room = await new Client(window.location.origin).join('arena');
room.onMessage('setup', (s: Setup) => {
  setup = s;
  screen = new Float32Array(s.labels.length * 2);
  status.textContent = `${s.labels.length} NPCs at ${s.hz} Hz · Canopy session ${s.session.slice(0, 8)}…`;
  legend(s.actions);
});
room.onMessage('frame', (f: Frame) => {
  frame = f;
  prev = cur;
  // Copy: the received bytes may not be 2-byte aligned.
  cur = new Uint16Array(f.npcs.slice().buffer);
  curAt = performance.now();
  figures.textContent = `room tick ${f.hud.tickP50} ms p50 / ${f.hud.tickP99} ms p99 · Canopy lateness ${f.hud.lateP50} ms p50 / ${f.hud.lateP99} ms p99`;
});
room.onLeave(() => (status.textContent = 'disconnected from the arena'));

function legend(actions: string[]): void {
  const ul = document.getElementById('legend')!;
  const teams = ['▲ Red Team grunts (guard)', '◆ Red Team escorts (follower)', '● Blue Team squads (squad)', '▪ raiders · ◯ you'];
  ul.replaceChildren(
    ...actions.map((a) => {
      const li = document.createElement('li');
      li.innerHTML = `<i style="background:${COLOURS[a] ?? COLOURS.other}"></i>${a}`;
      return li;
    }),
    ...teams.map((t) => {
      const li = document.createElement('li');
      li.className = 'team';
      li.textContent = t;
      return li;
    }),
  );
}

// Walking: arrow keys or WASD.
const keys = new Set<string>();
const sendMove = (): void => {
  const vx = (keys.has('ArrowRight') || keys.has('d') ? 1 : 0) - (keys.has('ArrowLeft') || keys.has('a') ? 1 : 0);
  const vy = (keys.has('ArrowDown') || keys.has('s') ? 1 : 0) - (keys.has('ArrowUp') || keys.has('w') ? 1 : 0);
  room.send('move', { vx, vy });
};
window.addEventListener('keydown', (e) => {
  if (!keys.has(e.key)) {
    keys.add(e.key);
    sendMove();
  }
});
window.addEventListener('keyup', (e) => {
  keys.delete(e.key);
  sendMove();
});

canvas.addEventListener('mousemove', (e) => {
  hovered = pick(e.clientX, e.clientY);
  if (hovered < 0 || !setup || !cur) {
    tip.hidden = true;
    return;
  }
  const o = hovered * STRIDE;
  const move = setup.actions[cur[o + 4]! >> 8] ?? 'idle';
  const hands = setup.actions[cur[o + 4]! & 0xff] ?? 'idle';
  tip.innerHTML = `<b>${setup.labels[hovered]}</b> · ${setup.trees[hovered]} · ${hands !== 'idle' ? hands : move} · hp ${cur[o + 5]}`;
  tip.style.left = `${e.clientX + 14}px`;
  tip.style.top = `${e.clientY + 10}px`;
  tip.hidden = false;
});
canvas.addEventListener('mouseleave', () => {
  hovered = -1;
  tip.hidden = true;
});
canvas.addEventListener('click', (e) => {
  // The NPC the tooltip names, if any: NPCs keep moving under a still pointer.
  const i = hovered >= 0 ? hovered : pick(e.clientX, e.clientY);
  if (i >= 0 && setup) window.open(inspectUrl(setup.canopyHttp, setup.session, i), '_blank');
});

/** The NPC drawn nearest to a screen point, within 9 px; -1 if none. */
function pick(px: number, py: number): number {
  let best = -1;
  let bestD = 81;
  for (let i = 0; i < screen.length / 2; i++) {
    const dx = screen[2 * i]! - px;
    const dy = screen[2 * i + 1]! - py;
    const d = dx * dx + dy * dy;
    if (d < bestD) {
      bestD = d;
      best = i;
    }
  }
  return best;
}

function draw(): void {
  requestAnimationFrame(draw);
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth;
  const h = canvas.clientHeight;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = '#14171c';
  ctx.fillRect(0, 0, w, h);
  if (!setup || !cur || !frame) return;
  const s = setup;
  scale = Math.min((w - 20) / s.width, (h - 20) / s.height);
  offX = (w - s.width * scale) / 2;
  offY = (h - s.height * scale) / 2;
  const X = (q: number): number => offX + (q / QUANT) * s.width * scale;
  const Y = (q: number): number => offY + (q / QUANT) * s.height * scale;

  // Floor, walls, cover spots.
  ctx.fillStyle = '#1b2027';
  ctx.fillRect(offX, offY, s.width * scale, s.height * scale);
  ctx.strokeStyle = '#2c323b';
  ctx.strokeRect(offX, offY, s.width * scale, s.height * scale);
  ctx.fillStyle = '#59616c';
  for (const wl of s.walls) ctx.fillRect(offX + wl.x * scale, offY + wl.y * scale, Math.max(2, wl.w * scale), Math.max(2, wl.h * scale));
  ctx.fillStyle = '#3a424d';
  for (const [cx, cy] of s.cover) ctx.fillRect(offX + cx * scale - 1, offY + cy * scale - 1, 2, 2);

  // Interpolate between the last two frames (they come at half the tick rate).
  const a = prev && prev.length === cur.length ? Math.min(1, (performance.now() - curAt) / (2000 / s.hz)) : 1;
  const n = s.labels.length;
  const size = Math.max(3.2, Math.min(7, scale * 1.6));
  ctx.lineWidth = 1;
  for (let i = 0; i < n; i++) {
    const o = i * STRIDE;
    const qx = prev && a < 1 ? prev[o]! + (cur[o]! - prev[o]!) * a : cur[o]!;
    const qy = prev && a < 1 ? prev[o + 1]! + (cur[o + 1]! - prev[o + 1]!) * a : cur[o + 1]!;
    const sx = X(qx);
    const sy = Y(qy);
    screen[2 * i] = sx;
    screen[2 * i + 1] = sy;
    const codes = cur[o + 4]!;
    const action = s.actions[codes & 0xff] !== 'idle' && (codes & 0xff) !== 0 ? s.actions[codes & 0xff]! : (s.actions[codes >> 8] ?? 'idle');
    const colour = COLOURS[action] ?? COLOURS.other!;
    if (cur[o + 2] !== NONE) {
      ctx.strokeStyle = colour + '55';
      ctx.beginPath();
      ctx.moveTo(sx, sy);
      ctx.lineTo(X(cur[o + 2]!), Y(cur[o + 3]!));
      ctx.stroke();
    }
    ctx.fillStyle = colour;
    ctx.strokeStyle = i === hovered ? '#ffffff' : '#0b0e12';
    shape(s.trees[i]!, sx, sy, i === hovered ? size * 1.8 : size);
  }

  // Raiders and players.
  ctx.fillStyle = '#f0f3f6';
  ctx.strokeStyle = '#ff5c5c';
  for (let k = 0; k < frame.raiders.length; k += 2) {
    const rx = X(frame.raiders[k]!);
    const ry = Y(frame.raiders[k + 1]!);
    ctx.fillRect(rx - 2, ry - 2, 4, 4);
    ctx.strokeRect(rx - 2.5, ry - 2.5, 5, 5);
  }
  for (const [id, px, py] of frame.players) {
    ctx.beginPath();
    ctx.arc(X(px), Y(py), 7, 0, 2 * Math.PI);
    ctx.fillStyle = id === s.you ? '#ffffff' : '#c9d1d9';
    ctx.fill();
    ctx.strokeStyle = '#ff7b72';
    ctx.lineWidth = 2;
    ctx.stroke();
    ctx.lineWidth = 1;
  }
}

/** Grunts are triangles, escorts diamonds, squad members circles. */
function shape(tree: string, x: number, y: number, r: number): void {
  ctx.beginPath();
  if (tree === 'guard') {
    ctx.moveTo(x, y - r);
    ctx.lineTo(x + r, y + r * 0.8);
    ctx.lineTo(x - r, y + r * 0.8);
    ctx.closePath();
  } else if (tree === 'follower') {
    ctx.moveTo(x, y - r);
    ctx.lineTo(x + r, y);
    ctx.lineTo(x, y + r);
    ctx.lineTo(x - r, y);
    ctx.closePath();
  } else {
    ctx.arc(x, y, r * 0.85, 0, 2 * Math.PI);
  }
  ctx.fill();
  ctx.stroke();
}

requestAnimationFrame(draw);

/** For tests and curious developers: where each NPC was last drawn, and the inspection URL of one. */
Object.assign(window, {
  arena: {
    npcOnScreen: (i: number): [number, number] => [screen[2 * i]!, screen[2 * i + 1]!],
    count: () => screen.length / 2,
    tick: () => frame?.tick ?? 0,
    hovered: () => hovered,
    inspectUrl: (i: number) => (setup ? inspectUrl(setup.canopyHttp, setup.session, i) : ''),
  },
});
