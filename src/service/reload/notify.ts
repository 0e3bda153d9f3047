// Who hears about a tree change: recorded sessions (a TREES record, so replay reloads at the same place), the
// validation thread (it validates against the trees in use), and every session's client (a `trees` message per changed tree, or an ignorable `error` E_RELOAD if refused).

import type { ValidationError } from '../../bt/errors.js';
import { formatError } from '../../bt/library.js';
import { ErrorCode } from '../../protocol/index.js';
import type { Recordings } from '../recording/recordings.js';
import type { SessionRegistry } from '../sessions/registry.js';
import type { ValidationWorker } from '../validation/runner.js';
import type { ChangeListener } from './live.js';

/** The listener server.ts gives LiveTrees. Everything here runs in the same turn as the pool's install. */
export function reloadListener(sessions: SessionRegistry, recordings: Recordings, validation: ValidationWorker): ChangeListener {
  return {
    installed(library, changed, outcome, policy) {
      recordings.treesChanged(library, changed.map((c) => c.tree), policy);
      // POST /v1/trees/validate resolves subtrees among the trees in use.
      validation.setTrees(Object.fromEntries(library.names().map((n) => [n, library.definition(n)])));
      for (const session of sessions.list()) {
        const counts = outcome.get(session.id);
        for (const c of changed) {
          const n = counts?.get(c.tree) ?? { restarted: 0, kept: 0 };
          session.treesChanged({ tree: c.tree, version: c.version, hash: c.hash, removed: c.removed, policy, restarted: n.restarted, kept: n.kept });
        }
      }
    },
    refused(errors: readonly ValidationError[], source) {
      const first = errors[0];
      const more = errors.length > 1 ? ` (and ${errors.length - 1} more; GET /v1/trees lists them)` : '';
      const message = `a tree change (${source === 'folder' ? 'the trees folder' : 'HTTP'}) was invalid and not installed; the trees in use are unchanged: ${first === undefined ? '' : formatError(first)}${more}`;
      for (const session of sessions.list()) session.notice(ErrorCode.E_RELOAD, message);
    },
  };
}
