#!/usr/bin/env node
// The `canopy` command: `serve` (the service), `validate DIR` (tree errors), `replay FILE` (exact replay
// and what-if of a recording), `convert` (BehaviorTree.CPP / Groot2 XML in and out).

import { Command, InvalidArgumentError, Option } from 'commander';
import { formatError, TreeLibrary } from '../bt/library.js';
import { runConvert } from '../interop/cli.js';
import { RecordingError, RecordingReader, verifyRecording, whatIf } from '../record/index.js';
import { loadCatalog } from '../service/pool/load.js';
import { formatVerify, formatWhatIf, progress } from './report.js';

function tickNumber(value: string): number {
  const n = Number(value);
  if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(n)) throw new InvalidArgumentError('expected an integer tick');
  return n;
}

/** Loads a tree folder with the plugins of `plugins`; prints every error and exits 1 when any. */
async function loadFolder(dir: string, plugins: string | undefined): Promise<TreeLibrary> {
  const catalog = await loadCatalog(plugins);
  if (!catalog.ok) fail(catalog.error);
  let r: Awaited<ReturnType<typeof TreeLibrary.loadFolder>>;
  try {
    r = await TreeLibrary.loadFolder(dir, { catalog: catalog.catalog });
  } catch (err) {
    fail(`${dir}: cannot read the folder: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!r.ok) {
    for (const e of r.errors) process.stderr.write(`${formatError(e)}\n`);
    process.stderr.write(`${r.errors.length} error${r.errors.length === 1 ? '' : 's'}\n`);
    process.exit(1);
  }
  for (const w of r.warnings) process.stderr.write(`${formatError(w)}\n`);
  return r.library;
}

function fail(message: string): never {
  process.stderr.write(`canopy: ${message}\n`);
  process.exit(2);
}

const program = new Command('canopy')
  .description('Canopy: an authoritative behavior-tree AI service for game servers.')
  .showHelpAfterError();

program
  .command('serve')
  .description('start the service (the same as `npm start`); every flag is also a CANOPY_* variable, see docs/configuration.md')
  .allowUnknownOption()
  .helpOption(false)
  .argument('[flags...]', 'service flags, e.g. --port 9000 --trees ./trees (--help lists them)')
  .action(async (flags: string[]) => {
    // The service's start command reads its flags from argv: hand them over as they are.
    process.argv = [process.argv[0]!, 'canopy serve', ...flags];
    await import('../service/main.js');
  });

program
  .command('validate')
  .description("check every tree of a folder; prints the engine's errors (file, JSON path, message), exit 1 when any")
  .argument('<dir>', 'tree folder')
  .option('--plugins <dir>', 'plugin folder the trees use')
  .action(async (dir: string, opts: { plugins?: string }) => {
    const library = await loadFolder(dir, opts.plugins);
    process.stdout.write(`${dir}: ${library.names().length} trees valid\n`);
  });

program
  .command('replay')
  .description('replay a recording offline: exact (byte-for-byte check, exit 1 on the first difference) or what-if with --trees')
  .argument('<file>', 'a recording (.canopyrec; any part: replay starts at its first part)')
  .option('--trees <dir>', 'what-if: run the recorded inputs through these trees and report what changes')
  .option('--plugins <dir>', 'plugin folder the trees use')
  .option('--json', 'print one JSON object (for CI pipelines)')
  .option('--from <tick>', 'report from this tick on (earlier ticks still run)', tickNumber)
  .option('--to <tick>', 'stop after this tick', tickNumber)
  .option('--workers <n>', 'exact replay: tick the agents on this many worker threads, pipelined (this thread reads and compares while they tick); default 0: this thread', (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0 || n > 64) throw new InvalidArgumentError('expected an integer from 0 to 64');
    return n;
  })
  .addOption(new Option('--fail-on-change <scope>', 'what-if: exit 1 when decisions change for agents on any tree, or only on untouched trees').choices(['any', 'untouched']))
  .option('--no-progress', 'no progress bar')
  .action(async (file: string, opts: { trees?: string; plugins?: string; json?: boolean; from?: number; to?: number; failOnChange?: 'any' | 'untouched'; progress: boolean; workers?: number }) => {
    let first: number | null = null;
    let last: number | null = null;
    try {
      const index = RecordingReader.open(file).index().filter((b) => !Number.isNaN(b.firstTick));
      first = index[0]?.firstTick ?? null;
      last = index.at(-1)?.lastTick ?? null;
    } catch (err) {
      if (err instanceof RecordingError) fail(err.message);
      throw err;
    }
    const bar = progress(opts.from ?? first, opts.to ?? last, opts.progress && opts.json !== true);
    const range = { ...(opts.from !== undefined ? { from: opts.from } : {}), ...(opts.to !== undefined ? { to: opts.to } : {}) };
    const plugins = opts.plugins !== undefined ? { plugins: opts.plugins } : {};
    if (opts.trees === undefined) {
      const workers = opts.workers !== undefined ? { workers: opts.workers } : {};
      const report = await verifyRecording(file, { ...range, ...plugins, ...workers, onTick: (t) => bar.tick(t) });
      bar.done();
      process.stdout.write(`${opts.json === true ? JSON.stringify(report) : formatVerify(file, report)}\n`);
      process.exitCode = report.identical ? 0 : 1;
      return;
    }
    const library = await loadFolder(opts.trees, opts.plugins);
    const report = await whatIf(file, library, { ...range, ...plugins, onTick: (t) => bar.tick(t) });
    bar.done();
    process.stdout.write(`${opts.json === true ? JSON.stringify(report) : formatWhatIf(report)}\n`);
    const changed = opts.failOnChange === 'any' ? report.summary.agentsAffected : opts.failOnChange === 'untouched' ? report.summary.agentsAffectedOnUnchangedTrees : 0;
    process.exitCode = changed > 0 ? 1 : 0;
  });

program
  .command('convert')
  .description('BehaviorTree.CPP v4 / Groot2 XML to Canopy tree files (--to canopy), or Canopy trees to Groot2 XML (--to xml); docs/interop.md')
  .argument('<input>', '--to canopy: an XML file; --to xml: a tree file (its subtrees come along) or a trees folder')
  .addOption(new Option('--to <format>', 'what to write').choices(['canopy', 'xml']).makeOptionMandatory())
  .option('-o, --output <path>', '--to canopy: a folder (one file per tree) or a file for a single tree; --to xml: the XML file (default: stdout)')
  .addOption(new Option('--format <format>', 'tree file format for --to canopy').choices(['json', 'yaml']))
  .option('--plugins <dir>', 'plugin folder whose node kinds the trees use')
  .action(async (input: string, opts: { to: 'canopy' | 'xml'; output?: string; format?: 'json' | 'yaml'; plugins?: string }) => {
    const catalog = await loadCatalog(opts.plugins);
    if (!catalog.ok) fail(catalog.error);
    process.exitCode = await runConvert({
      input,
      to: opts.to,
      catalog: catalog.catalog,
      ...(opts.output !== undefined ? { output: opts.output } : {}),
      ...(opts.format !== undefined ? { format: opts.format } : {}),
    });
  });

await program.parseAsync(process.argv);
