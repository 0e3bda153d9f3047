// The benchmarks' command lines: node:util's parseArgs, plus `--help` and readable mistakes. A benchmark's usage is the
// comment block it opens with (what it measures, how to run it, its options), printed as it stands in the file.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';

/**
 * parseArgs(config) for the benchmark at `scriptUrl` (its `import.meta.url`). `--help` or `-h` prints the script's
 * opening comment and its options, and exits 0; an option it does not know, a value missing or of the wrong kind
 * print one line saying so and the options, and exit 2 (parseArgs would throw, and Node print a stack trace).
 */
export function benchArgs<const T extends ParseArgsConfig>(scriptUrl: string, config: T): ReturnType<typeof parseArgs<T>> {
  const args = config.args ?? process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    console.log(usage(scriptUrl, config));
    process.exit(0);
  }
  try {
    return parseArgs(config);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS')) throw err;
    console.error(`${(err as Error).message}\n\n${optionLines(config)}`);
    process.exit(2);
  }
}

/**
 * Option `name` of `values` (benchArgs' values) as an integer of at least `min`; anything else prints one line saying
 * so and exits 2, as a mistake benchArgs catches does.
 */
export function intArg(values: Readonly<Record<string, unknown>>, name: string, min: number): number {
  const raw = values[name];
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) {
    console.error(`--${name}: expected an integer of at least ${min}, got '${String(raw)}'`);
    process.exit(2);
  }
  return n;
}

/** The script's opening comment (its `//` lines, the markers taken off), then its options. */
export function usage(scriptUrl: string, config: ParseArgsConfig): string {
  const head: string[] = [];
  for (const line of readFileSync(fileURLToPath(scriptUrl), 'utf8').split('\n')) {
    if (!line.startsWith('//')) break;
    head.push(line.replace(/^\/\/ ?/, ''));
  }
  return `${head.join('\n').trim()}\n\n${optionLines(config)}`;
}

function optionLines(config: ParseArgsConfig): string {
  const lines = Object.entries(config.options ?? {}).map(([name, o]) => {
    const value = o.type === 'string' ? ` <${o.multiple === true ? 'value, repeatable' : 'value'}>` : '';
    const short = o.short === undefined ? '' : `, -${o.short}`;
    const given = o.default === undefined || o.default === false ? '' : `   (default ${String(o.default)})`;
    return `  --${name}${short}${value}${given}`;
  });
  return ['options:', ...lines, '  --help, -h'].join('\n');
}
