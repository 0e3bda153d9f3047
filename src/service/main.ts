// The start command: `node dist/src/service/main.js [--port 9000 ...]` (flags or CANOPY_* variables).
// Exit codes: 0 after a clean shutdown, 1 when start-up fails (invalid trees...), 2 for bad settings.

import { pino } from 'pino';
import { ConfigError, describeSettings, parseConfig, redactConfig, type Config } from './config.js';
import { reserveNativeHeap, tuneHeap } from './heap.js';
import { StartupError, createServer, type CanopyServer } from './server.js';

tuneHeap();

const USAGE = [
  'usage: canopy [--flag value ...]   (each flag is also an environment variable; flags win)',
  ...describeSettings().map((s) => `  ${s.flag.padEnd(20)} ${s.env}`),
  'See docs/configuration.md.',
].join('\n');

async function main(argv: readonly string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  let config: Config;
  try {
    config = parseConfig(argv, process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const logger = pino({ level: config.logLevel });
  reserveNativeHeap(config.nativeHeapReserveMb);

  // Signals are handled from the first moment: /healthz answers while the workers still start, so
  // an orchestrator may stop us before `listen()` resolves. A stop during start-up waits for the
  // server to exist, then drains it like any other.
  let server: CanopyServer | undefined;
  let stopping = false;
  const shutdown = (): void => {
    if (!server) return;
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, shutdownMs: config.shutdownMs }, 'draining');
    // Whatever happens, the process is gone within shutdownMs.
    setTimeout(() => {
      logger.error({ shutdownMs: config.shutdownMs }, 'shutdown took too long; exiting');
      process.exit(1);
    }, config.shutdownMs).unref();
    shutdown();
  };
  // `on`, not `once`: Ctrl-C under `npm start` delivers SIGINT twice (the terminal's, and npm's
  // forwarded copy); a repeat must not kill the process mid-drain. The hard timer still bounds it.
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  logger.info({ config: redactConfig(config) }, 'canopy starting');

  try {
    server = await createServer(config, { logger });
    if (stopping) return shutdown();
    await server.listen();
  } catch (err) {
    if (err instanceof StartupError) {
      process.stderr.write(`canopy cannot start:\n${err.message}\n`);
      process.exit(1);
    }
    if (stopping) return; // closed while starting: the drain decides the exit code
    logger.fatal({ err }, 'canopy cannot start');
    process.exit(1);
  }
}

await main(process.argv.slice(2));
