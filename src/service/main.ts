// The start command: `node dist/src/service/main.js [--port 9000 ...]` (flags or CANOPY_* variables).
// Exit codes: 0 after a clean shutdown, 1 when start-up fails (invalid trees...), 2 for bad settings.

import { pino } from 'pino';
import { ConfigError, describeSettings, parseConfig, redactConfig, type Config } from './config.js';
import { StartupError, createServer } from './server.js';

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
  logger.info({ config: redactConfig(config) }, 'canopy starting');

  let server;
  try {
    server = await createServer(config, { logger });
    await server.listen();
  } catch (err) {
    if (err instanceof StartupError) {
      process.stderr.write(`canopy cannot start:\n${err.message}\n`);
      process.exit(1);
    }
    logger.fatal({ err }, 'canopy cannot start');
    process.exit(1);
  }

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, shutdownMs: config.shutdownMs }, 'draining');
    // Whatever happens, the process is gone within shutdownMs.
    setTimeout(() => {
      logger.error({ shutdownMs: config.shutdownMs }, 'shutdown took too long; exiting');
      process.exit(1);
    }, config.shutdownMs).unref();
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

await main(process.argv.slice(2));
