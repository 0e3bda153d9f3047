// The one error type the client SDK rejects promises with and emits: a protocol or client code.

import type { AgentId, ClientErrorCode, ErrorCode } from '../protocol/index.js';

/**
 * An error from the Canopy service (`code` is a protocol code such as `E_BAD_FIELD`, with `re`
 * the request id it answers, and `entry`/`agent` when only one entry was refused) or from the
 * client itself (`E_CLOSED`, `E_TIMEOUT`,
 * `E_UNAUTHORIZED`, `E_CONNECT`, with `status` the HTTP status of a refused upgrade).
 */
export class CanopyError extends Error {
  override readonly name = 'CanopyError';
  /** The protocol or client error code. */
  readonly code: ErrorCode | ClientErrorCode;
  /** The id of the request this error answers, when it answers one. */
  readonly re: number | undefined;
  /** HTTP status of a refused WebSocket upgrade (401 for `E_UNAUTHORIZED`). */
  readonly status: number | undefined;
  /** True when the server refused one entry of a list and applied the rest of the message. */
  readonly entry: boolean;
  /** The agent a refused entry was about, when the server could read its id. */
  readonly agent: AgentId | undefined;

  constructor(
    code: ErrorCode | ClientErrorCode,
    message: string,
    details: {
      readonly re?: number | undefined;
      readonly status?: number | undefined;
      readonly entry?: boolean | undefined;
      readonly agent?: AgentId | undefined;
      readonly cause?: unknown;
    } = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.re = details.re;
    this.status = details.status;
    this.entry = details.entry ?? false;
    this.agent = details.agent;
  }
}
