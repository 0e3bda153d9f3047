// POST /v1/trees/validate hardened: raw JSON and YAML text parsed by us (positions in every error),
// a body limit of its own, a cap on reported errors, warnings, and a validation thread that can be
// stuck or overloaded without the service noticing.

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { pino } from 'pino';
import { NodeCatalog } from '../../src/bt/catalog.js';
import { ValidationWorker } from '../../src/service/validation/runner.js';
import { validatePostedTree, MAX_REPORTED_PROBLEMS } from '../../src/service/validation/posted.js';
import { defaultConfig } from '../../src/service/config.js';
import { createServer } from '../../src/service/server.js';
import { TREES, http, start, writeFixture, type Running } from './harness.js';

/** A plugin node type whose own check never ends when `spin: true`: a validation that must be stopped. */
const SPIN_PLUGIN = `export default {
  name: 'spin',
  nodes: [{
    type: 'spin',
    category: 'leaf',
    description: 'Test leaf whose validation never ends when spin is true.',
    params: { spin: { type: 'boolean', description: 'loop forever in validation' } },
    validate(node) { if (node.spin === true) for (;;) {} },
    build: () => ({ tick: () => 1 }),
  }],
};
`;

let fixture: Awaited<ReturnType<typeof writeFixture>>;
let running: Running;

beforeAll(async () => {
  fixture = await writeFixture(TREES, { 'spin.mjs': SPIN_PLUGIN });
  running = await start({
    trees: fixture.trees,
    plugins: fixture.plugins,
    maxValidateBytes: 64 * 1024,
    logLevel: 'silent',
    tuning: { validateTimeLimitMs: 1500 },
  });
});

afterAll(async () => {
  await running.close();
  await fixture.remove();
});

/** Posts `text` with content type `type`; `query` is appended to the path. */
function postText(text: string, type: string, query = ''): Promise<{ status: number; body: unknown }> {
  return http(running.base, 'POST', `/v1/trees/validate${query}`, new TextEncoder().encode(text), { 'content-type': type });
}

type Answer = { valid: boolean; errors: Array<Record<string, unknown>>; warnings: Array<Record<string, unknown>>; omittedErrors: number };

describe('text bodies: parsed by the validation thread, errors with line and column', () => {
  test('a trailing comma in application/json is E_TREE_PARSE with its line and column (was a generic 400)', async () => {
    const res = await postText('{\n  "root": { "type": "succeed", }\n}\n', 'application/json');
    expect(res).toMatchObject({
      status: 200,
      body: {
        valid: false,
        errors: [{ code: 'E_TREE_PARSE', tree: 'tree', path: '', field: null, message: "the file is not valid JSON: trailing comma: remove the ',' before '}'", line: 2, column: 32 }],
        warnings: [],
        omittedErrors: 0,
        omittedWarnings: 0,
      },
    });
  });

  test('YAML bodies are accepted under every YAML type (was 415); node errors carry their line and column', async () => {
    const yaml = 'root:\n  type: sequence\n  children:\n    - type: wait\n      seconds: -1\n    - type: sequnce\n';
    for (const type of ['text/yaml', 'application/yaml', 'application/x-yaml', 'text/plain; charset=utf-8']) {
      const res = await postText(yaml, type);
      expect(res.status).toBe(200);
      expect((res.body as Answer).errors).toEqual([
        { code: 'E_PARAM_RANGE', tree: 'tree', path: 'root.children[0]', field: 'seconds', message: "'seconds' must be at least 0, found -1", line: 5, column: 7 },
        { code: 'E_NODE_UNKNOWN_TYPE', tree: 'tree', path: 'root.children[1]', field: null, message: "unknown node type 'sequnce' (did you mean 'sequence'?)", line: 6, column: 7 },
      ]);
    }
    const broken = await postText('root:\n  type: [\n', 'text/yaml');
    expect((broken.body as Answer).errors).toMatchObject([{ code: 'E_TREE_PARSE', line: 3 }]);
  });

  test('text/plain starting with { is strict JSON; ?name= names the tree in every error', async () => {
    const res = await postText('{ "root": { "type": "subtree", "tree": "guard" } }', 'text/plain', '?name=guard');
    expect((res.body as Answer).errors).toEqual([
      { code: 'E_SUBTREE_CYCLE', tree: 'guard', path: 'root', field: 'tree', message: 'subtrees form a cycle: guard → guard', line: 1, column: 32 },
    ]);
  });

  test('a wrapped JSON body: the wrapper names the tree, positions point into the posted text', async () => {
    const text = '{"name": "boss",\n "definition": {"blackboard": {"target": null},\n  "root": {"type": "set", "values": {"taget": "bb.target"}}}}';
    const res = await postText(text, 'application/json');
    expect((res.body as Answer).errors).toEqual([
      {
        code: 'E_BLACKBOARD_UNDECLARED',
        tree: 'boss',
        path: 'root',
        field: 'values.taget',
        message: "blackboard key 'taget' is not declared in this tree's blackboard (did you mean 'target'?)",
        line: 3,
        column: 38,
      },
    ]);
  });

  test('an unknown content type is refused with 415 E_PROTOCOL', async () => {
    const res = await postText('<tree/>', 'application/xml');
    expect(res).toMatchObject({ status: 415, body: { code: 'E_PROTOCOL' } });
  });
});

describe('bounds', () => {
  test('a body above CANOPY_MAX_VALIDATE_BYTES is 413 E_LIMIT, saying which limit', async () => {
    const big = JSON.stringify({ root: { type: 'succeed', name: 'x'.repeat(70 * 1024) } });
    const res = await postText(big, 'application/json');
    expect(res).toMatchObject({
      status: 413,
      body: { code: 'E_LIMIT', message: 'the body is larger than the 65536 bytes a tree may have here (CANOPY_MAX_VALIDATE_BYTES); split it into subtrees' },
    });
  });

  test(`an error-heavy tree reports its first ${MAX_REPORTED_PROBLEMS} errors and counts the rest`, async () => {
    const children = Array.from({ length: 300 }, () => ({ type: 'wait', seconds: -1 }));
    const res = await postText(JSON.stringify({ root: { type: 'sequence', children } }), 'application/json');
    const body = res.body as Answer;
    expect(body.errors.length).toBe(MAX_REPORTED_PROBLEMS);
    expect(body.omittedErrors).toBe(300 - MAX_REPORTED_PROBLEMS);
    expect(body.errors[99]).toMatchObject({ path: 'root.children[99]', line: 1 });
  });

  test('warnings come back beside errors; the tree is still valid', async () => {
    const tree = { root: { type: 'selector', reactive: true, children: [{ type: 'succeed', if: 'true', abort: 'lower' }, { type: 'running' }] } };
    const res = await http(running.base, 'POST', '/v1/trees/validate', tree);
    expect(res.body).toEqual({
      valid: true,
      errors: [],
      warnings: [
        {
          code: 'W_ABORT_REACTIVE',
          tree: 'tree',
          path: 'root.children[0]',
          field: 'abort',
          message: "abort 'lower' adds nothing under a reactive selector: it re-checks its earlier children every tick anyway; remove 'abort' or make the selector non-reactive",
          line: 1,
          column: 86,
        },
      ],
      omittedErrors: 0,
      omittedWarnings: 0,
    });
  });

  test('a validation that never ends is stopped at the time limit (422 E_LIMIT); meanwhile the service answers; the next one works', async () => {
    const stuck = http(running.base, 'POST', '/v1/trees/validate', { root: { type: 'spin', spin: true } });
    // Validation runs on its own thread: the main thread answers while it spins.
    const alive = await http(running.base, 'GET', '/healthz');
    expect(alive).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await stuck).toEqual({
      status: 422,
      body: { code: 'E_LIMIT', message: 'validating this tree took longer than 1500 ms and was stopped; split it into subtrees and validate them one by one' },
      headers: expect.anything(),
    });
    const after = await http(running.base, 'POST', '/v1/trees/validate', { root: { type: 'spin', spin: false } });
    expect(after).toMatchObject({ status: 200, body: { valid: true } });
  });
});

describe('ValidationWorker queue', () => {
  test('beyond the queue limit requests are refused at once with 429 E_LIMIT; the others are answered in order', async () => {
    const worker = new ValidationWorker({ plugins: null, trees: {} }, { timeLimitMs: 30_000, queueLimit: 2 }, pino({ level: 'silent' }));
    try {
      const bytes = new TextEncoder().encode('{"root": {"type": "succeed"}}');
      const answers = await Promise.all(Array.from({ length: 5 }, () => worker.validate({ bytes, contentType: 'application/json', name: null })));
      expect(answers.map((a) => (a.ok ? 200 : a.status))).toEqual([200, 200, 200, 429, 429]);
      expect(answers[4]).toEqual({ ok: false, status: 429, code: 'E_LIMIT', message: '3 trees are being validated or waiting already (the limit is 3); retry shortly' });
    } finally {
      await worker.close();
    }
  });
});

describe('validatePostedTree (what the thread runs)', () => {
  test('a MessagePack body that is not MessagePack is E_PROTOCOL; invalid UTF-8 text is E_TREE_PARSE', () => {
    const env = { catalog: new NodeCatalog(), trees: {} };
    expect(validatePostedTree(env, { bytes: Uint8Array.of(0xc1), contentType: 'application/msgpack', name: null })).toMatchObject({ ok: false, status: 400, code: 'E_PROTOCOL' });
    expect(validatePostedTree(env, { bytes: Uint8Array.of(0xff, 0xfe), contentType: 'text/yaml', name: null })).toMatchObject({
      ok: true,
      body: { valid: false, errors: [{ code: 'E_TREE_PARSE', message: 'the body is not valid UTF-8 text', line: 1, column: 1 }] },
    });
  });
});

describe('start-up', () => {
  test('a tree with a warning loads; the warning is logged once, compiler-style, with file, line and column', async () => {
    const alert = 'blackboard: { alarm: false }\nroot:\n  type: selector\n  reactive: true\n  children:\n    - type: succeed\n      if: bb.alarm\n      abort: lower\n    - type: running\n';
    const fx = await writeFixture({ 'alert.yaml': alert });
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const server = await createServer({ ...defaultConfig(), host: '127.0.0.1', port: 0, workers: 0, trees: fx.trees, logLevel: 'warn' }, { logger });
    try {
      expect(server.library.names()).toEqual(['alert']);
      expect(lines.map((l) => [l.level, l.code, l.line, l.column, l.msg])).toEqual([
        [
          40,
          'W_ABORT_REACTIVE',
          8,
          7,
          `${fx.trees}/alert.yaml:8:7: root.children[0].abort: warning: abort 'lower' adds nothing under a reactive selector: it re-checks its earlier children every tick anyway; remove 'abort' or make the selector non-reactive [W_ABORT_REACTIVE]`,
        ],
      ]);
    } finally {
      await server.close();
      await fx.remove();
    }
  });
});
