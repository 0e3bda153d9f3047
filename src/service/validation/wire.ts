// Messages between the main thread's ValidationWorker and the validation worker thread.

import type { PostedTree, ValidateAnswer } from './posted.js';

/** What the worker starts with: the plugin folder (for the catalog) and the loaded trees' definitions. */
export interface ValidationWorkerData {
  readonly plugins: string | null;
  readonly trees: Readonly<Record<string, unknown>>;
}

/** Sent once when the worker has loaded its plugins (or could not). */
export type ValidationHello = { readonly t: 'ready'; readonly ok: true } | { readonly t: 'ready'; readonly ok: false; readonly error: string };

/** One posted tree to validate. */
export interface ValidationRequest extends PostedTree {
  readonly id: number;
}

/** The answer to request `id`; `error` describes a failure the main thread should log. */
export interface ValidationReply {
  readonly id: number;
  readonly answer: ValidateAnswer;
  readonly error?: string;
}
