// Node statuses as small integers: they live in each agent's Uint8Array, indexed by node number.

/** What a node's tick returns, plus the two resting states an agent's status array can hold. */
export const Status = {
  /** Never ticked since the agent was created (or reset by a stop). */
  IDLE: 0,
  SUCCESS: 1,
  FAILURE: 2,
  /** The node is active: it is resumed, not restarted, on its parent's next tick. */
  RUNNING: 3,
  /** Abandoned while running (parent finished, guard aborted, time limit): its next tick starts fresh. */
  HALTED: 4,
} as const;

export type StatusCode = (typeof Status)[keyof typeof Status];
/** The three results a tick can return. */
export type TickStatus = typeof Status.SUCCESS | typeof Status.FAILURE | typeof Status.RUNNING;

export const STATUS_NAMES = ['idle', 'success', 'failure', 'running', 'halted'] as const;
export type StatusName = (typeof STATUS_NAMES)[number];

/** Slack for comparisons of tree time, which accumulates float periods (0.05 * 3 !== 0.15). */
export const TIME_EPSILON = 1e-9;
