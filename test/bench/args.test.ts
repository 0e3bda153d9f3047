// The benchmarks' command lines (bench/lib/args.ts): `--help` prints what the script measures and its options, a
// mistake is one line and exit code 2, never a stack trace or a benchmark run nobody asked for.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, test } from 'vitest';

const run = promisify(execFile);

/** Runs a benchmark from its TypeScript source (node + tsx): its exit code and output. */
async function bench(script: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', `bench/${script}`, ...args], { timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout: string; stderr: string };
    return { code: e.code ?? -1, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('benchmark command lines', () => {
  test('--help prints the opening comment and the options, and runs nothing', async () => {
    const out = await bench('pool.ts', '--help');
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/^Agent pool benchmark: S sessions × N agents/);
    expect(out.stdout).toContain('npm run build && node dist/bench/pool.js [--sessions S]');
    expect(out.stdout).toMatch(/^ {2}--agents <value> {3}\(default 20000\)$/m);
    expect(out.stdout).toMatch(/^ {2}--json$/m);
    expect(out.stdout).not.toMatch(/agent-ticks\/s|Node v\d/);
  });

  test('a benchmark without options of its own answers --help too, instead of running', async () => {
    const out = await bench('expr-check.ts', '-h');
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/^Validation's check-only path for expressions/);
    expect(out.stdout).not.toContain('round 1');
  });

  test('a number option that is not a number of the range: one line naming it, exit code 2, nothing run', async () => {
    const out = await bench('client-rows.ts', '--rounds', '1');
    expect(out.code).toBe(2);
    expect(out.stderr.trim()).toBe("--rounds: expected an integer of at least 2, got '1'");
    const typo = await bench('no-codegen.ts', '--pairs', 'three');
    expect(typo.code).toBe(2);
    expect(typo.stderr.trim()).toBe("--pairs: expected an integer of at least 1, got 'three'");
  });

  test('an unknown option: one line naming it, the options, exit code 2', async () => {
    const out = await bench('spawn-stall.ts', '--agnets', '5000');
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/^Unknown option '--agnets'/);
    expect(out.stderr).toContain('--agents <value>   (default 10000)');
    expect(out.stderr).not.toMatch(/\n\s+at /);
  });
});
