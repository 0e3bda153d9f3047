// Regression (issue 13): the `log` node did nothing in the service (the pool's sink dropped every line). Now its
// lines are logged at their level with session, agent and node, from worker threads too, capped per session tick.

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { LOG_LINES_PER_TICK, createAgentPool, type PoolLogEvent, type PoolLogger } from '../../src/service/pool/index.js';
import { pino } from 'pino';
import { defaultConfig } from '../../src/service/config.js';
import { createServer } from '../../src/service/server.js';
import { http, writeFixture } from './harness.js';

const CHATTY = {
  root: {
    type: 'sequence',
    children: [
      { type: 'log', level: 'info', message: 'self.x' },
      { type: 'log', name: 'quiet', message: "'debug line'" },
      { type: 'action', action: 'ok', instant: true },
    ],
  },
};

let fixture: Awaited<ReturnType<typeof writeFixture>>;
beforeAll(async () => {
  fixture = await writeFixture({ chatty: CHATTY });
});
afterAll(async () => {
  await fixture.remove();
});

/** A logger recording every call as [level, fields, message]. */
function recorder(): PoolLogger & { lines: Array<[string, Record<string, unknown>, string | undefined]> } {
  const lines: Array<[string, Record<string, unknown>, string | undefined]> = [];
  const at = (level: string) => (obj: unknown, msg?: string) => lines.push([level, obj as Record<string, unknown>, msg]);
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

describe.each([
  ['inline', 0],
  ['two worker threads', 2],
])('log node in the pool (%s)', (_name, workers) => {
  test('logs each line at its level with session, agent (id, label) and node (index, path); onLog sees them', async () => {
    const logger = recorder();
    const pool = await createAgentPool({ trees: fixture.trees, workers, logger });
    const seen: PoolLogEvent[] = [];
    pool.onLog = (e) => seen.push(e);
    try {
      await pool.ready();
      pool.createSession('s', { fields: ['x'], maxAgents: 10 });
      pool.spawn('s', [{ id: 1, tree: 'chatty', label: 'orc' }, { id: 'b', tree: 'chatty' }]);
      pool.observe('s', [[1, 5], ['b', 6]], true);
      const d = await pool.tick('s', 3, 0.1, 0.05, 3);
      expect(d.actions).toHaveLength(2);
      const infos = logger.lines.filter((l) => l[0] === 'info').toSorted((x, y) => String(x[1].agent).localeCompare(String(y[1].agent)));
      expect(infos).toEqual([
        ['info', { session: 's', tick: 3, agent: 1, label: 'orc', tree: 'chatty', node: 1, path: 'root.children[0]' }, '5'],
        ['info', { session: 's', tick: 3, agent: 'b', label: '', tree: 'chatty', node: 1, path: 'root.children[0]' }, '6'],
      ]);
      const debugs = logger.lines.filter((l) => l[0] === 'debug');
      expect(debugs).toHaveLength(2);
      expect(debugs[0]![1]).toMatchObject({ node: 2, path: 'root.children[1]' });
      expect(debugs[0]![2]).toBe('debug line');
      expect(logger.lines.filter((l) => l[0] === 'warn' || l[0] === 'error')).toEqual([]);
      expect(seen).toHaveLength(4);
      expect(seen.find((e) => e.agent === 1 && e.level === 'info')).toEqual({
        session: 's', tick: 3, agent: 1, label: 'orc', tree: 'chatty', node: 1, path: 'root.children[0]', level: 'info', message: '5',
      });
    } finally {
      await pool.close();
    }
  });

  test(`a log node on many agents is capped at ${LOG_LINES_PER_TICK} lines per session tick, the rest counted in one warn line`, async () => {
    const logger = recorder();
    const pool = await createAgentPool({ trees: fixture.trees, workers, logger });
    try {
      await pool.ready();
      pool.createSession('s', { fields: ['x'], maxAgents: 1000 });
      const ids = Array.from({ length: 500 }, (_, i) => i);
      pool.spawn('s', ids.map((id) => ({ id, tree: 'chatty' })));
      for (let tick = 1; tick <= 2; tick++) {
        logger.lines.length = 0;
        const d = await pool.tick('s', tick, tick / 20, 0.05, tick);
        expect(d.actions).toHaveLength(500); // every agent still ticks and decides
        const lines = logger.lines.filter((l) => l[0] === 'info' || l[0] === 'debug');
        expect(lines).toHaveLength(LOG_LINES_PER_TICK);
        const warns = logger.lines.filter((l) => l[0] === 'warn');
        expect(warns).toHaveLength(1);
        expect(warns[0]![1]).toMatchObject({ session: 's', tick, dropped: 1000 - LOG_LINES_PER_TICK, cap: LOG_LINES_PER_TICK });
      }
    } finally {
      await pool.close();
    }
  });
});

test('the service logs a log node through its pino logger, from worker threads, at the node level', async () => {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  const server = await createServer({ ...defaultConfig(), host: '127.0.0.1', port: 0, workers: 2, trees: fixture.trees }, { logger });
  try {
    const { port } = await server.listen();
    const base = `http://127.0.0.1:${port}`;
    const session = ((await http(base, 'POST', '/v1/sessions', { fields: ['x'] })).body as { session: string }).session;
    await http(base, 'POST', `/v1/sessions/${session}/spawn`, { agents: [{ id: 4, tree: 'chatty', label: 'scout' }] });
    expect((await http(base, 'POST', `/v1/sessions/${session}/tick`, { tick: 1, time: 0, agents: [[4, 42]] })).status).toBe(200);
    const logged = lines.filter((l) => l.msg === '42');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ level: 30, session, tick: 1, agent: 4, label: 'scout', tree: 'chatty', node: 1, path: 'root.children[0]' });
    expect(lines.some((l) => l.msg === 'debug line')).toBe(false); // below the service's level
  } finally {
    await server.close();
  }
});

test('lines below the logger level are neither logged nor counted as dropped (no warn every tick for debug lines)', async () => {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  const pool = await createAgentPool({ trees: fixture.trees, workers: 0, logger });
  try {
    await pool.ready();
    pool.createSession('s', { fields: ['x'], maxAgents: 1000 });
    pool.spawn('s', Array.from({ length: 500 }, (_, id) => ({ id, tree: 'chatty' })));
    for (let tick = 1; tick <= 3; tick++) await pool.tick('s', tick, tick / 20, 0.05, tick);
    expect(lines).toEqual([]); // 1,000 info + debug lines a tick, all below warn: not one "dropped" warning
  } finally {
    await pool.close();
  }
});
