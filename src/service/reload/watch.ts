// Watches the trees folder (CANOPY_WATCH): a burst of file events (an editor's save writes, renames and
// touches) becomes one folder reload once the folder has been quiet for a moment.

import { watch, type FSWatcher } from 'node:fs';
import type { Logger } from 'pino';

/** Quiet time after the last event before the folder is reloaded. */
export const WATCH_DEBOUNCE_MS = 150;

/** A running folder watch; `close()` stops it (a reload already running finishes). */
export interface FolderWatch {
  close(): void;
}

/**
 * Calls `reload` after each burst of changes in `dir` (not its subfolders). A reload never runs twice at
 * once: events during one schedule exactly one more. A folder that cannot be watched is logged, not fatal.
 */
export function watchFolder(dir: string, reload: () => Promise<unknown>, logger: Logger, debounceMs = WATCH_DEBOUNCE_MS): FolderWatch {
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let again = false;
  let closed = false;
  const run = (): void => {
    timer = undefined;
    if (closed) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    reload()
      .catch((err: unknown) => logger.error({ err }, 'trees folder reload failed'))
      .finally(() => {
        running = false;
        if (again && !closed) {
          again = false;
          schedule();
        }
      });
  };
  const schedule = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(run, debounceMs);
  };
  let watcher: FSWatcher | null = null;
  try {
    watcher = watch(dir, { persistent: false }, () => schedule());
    watcher.on('error', (err) => logger.warn({ err, dir }, 'trees folder watch stopped'));
  } catch (err) {
    logger.warn({ err, dir }, 'the trees folder cannot be watched: edits need PUT /v1/trees/:name or a restart');
  }
  return {
    close() {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      watcher?.close();
    },
  };
}
