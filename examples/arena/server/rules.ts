// The arena's constants, NPC kinds and action codes, shared by the server and the browser view.

/** World constants, in world units (metres) and seconds. */
export const RULES = {
  walkSpeed: 2,
  runSpeed: 5,
  sprintSpeed: 6.5,
  fleeSpeed: 6,
  fleeSeconds: 2,
  shootSeconds: 0.3,
  /** Actions the arena does not know finish after this long. */
  otherSeconds: 0.5,
  waypointRadius: 6,
  /** Raiders per NPC: they appear at the edges and close in. */
  raidersPerNpc: 0.12,
  raiderSpeed: 1.6,
  /** Raiders close in to this distance, then hold. */
  raiderHoldDistance: 3,
  /** Raiders hurt NPCs within this distance. */
  raiderRange: 6,
  raiderDps: 14,
  /** Shots hit within this distance. */
  shotRange: 8,
  /** NPCs see enemies (and raiders see NPCs) within this distance. */
  sightRange: 25,
  regenPerSecond: 3,
  maxHp: 100,
  playerSpeed: 7,
} as const;

/** NPC kinds: which team, which tree. */
export const KINDS = { GRUNT: 0, ESCORT: 1, SQUAD: 2 } as const;
export type Kind = (typeof KINDS)[keyof typeof KINDS];

/** Action codes sent to the view (index in this list; 0: nothing running). */
export const ACTIONS = ['idle', 'moveTo', 'flee', 'crouch', 'shoot', 'fire', 'other'] as const;

/** An axis-aligned wall. */
export interface Wall {
  readonly x: number;
  readonly y: number;
  readonly w: number;
  readonly h: number;
}
