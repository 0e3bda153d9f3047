// What the inspector's data stream sends (docs/inspector.md); mirrors src/bt/frames.ts and src/inspector/*.

export type AgentId = string | number;

export interface TreeNode {
  type: string;
  name: string | null;
  path: string;
  file: string;
  children: number[];
  action?: string;
  guard?: { if: string; abort: string };
  params?: Record<string, unknown>;
  services?: Array<{ every: number; values?: Record<string, string>; service?: string }>;
}

export interface TreeView {
  name: string;
  version: string;
  description: string | null;
  nodes: TreeNode[];
  errors: Array<{ code: string; path: string; message: string }>;
}

export interface SessionSample {
  t: number;
  session: string;
  mode: string;
  hz: number;
  transport: string;
  connected: boolean;
  agents: number;
  tick: number | null;
  ticksPerSec: number;
  decisionsPerSec: number;
  errorsPerSec: number;
  lateMs: number;
  missed: number;
  tickMs: number;
  watched: number;
}

export interface NodeFrame {
  status: 'idle' | 'running' | 'success' | 'failure';
  ticked: boolean;
  halted?: boolean;
  aborted?: boolean;
  /** Forced by the inspector control (not run). */
  forced?: boolean;
  guard?: boolean;
  state?: Record<string, number>;
}

export type TraceEvent =
  | { kind: 'action'; node: number; seq: number; action: string; args: unknown }
  | { kind: 'cancel'; node: number; seq: number }
  | { kind: 'result'; seq: number; status: 'success' | 'failure' }
  | { kind: 'done'; status: 'success' | 'failure' }
  | { kind: 'error'; code: string; message: string }
  | { kind: 'log'; node: number; level: string; message: string }
  | { kind: 'abort'; node: number; mode: string };

export interface AgentFrame {
  tick: number;
  time: number;
  nodes: NodeFrame[];
  bb: Record<string, unknown>;
  changed: string[];
  self: unknown;
  waiting: Array<{ seq: number; node: number; action: string; since: number }>;
  events: TraceEvent[];
}

export interface WhyTerm {
  text: string;
  value: unknown;
  children: WhyTerm[];
  skipped?: boolean;
}
export interface WhyCheck {
  node: number;
  path: string;
  kind: 'guard' | 'condition' | 'service';
  source: string;
  value: unknown;
  term: WhyTerm;
}
export interface WhyReport {
  tick: number;
  checks: WhyCheck[];
}

/** One part file of a recording (GET /v1/recordings). */
export interface RecordingListing {
  id: string;
  recording: string;
  part: number;
  bytes: number;
  modified: string;
  active: boolean;
  session: string | null;
}

export interface RecordingInfo {
  id: string;
  header: { mode: string; hz: number; session: string; startedAt: string };
  firstTick: number | null;
  lastTick: number | null;
  problem: string | null;
}

/** The what-if report (src/record/whatif.ts), as far as the page shows it. */
export interface WhatIfReport {
  ticks: number;
  agents: number;
  treesChanged: string[];
  changes: Array<{
    id: AgentId;
    label: string;
    tree: string;
    treeChanged: boolean;
    firstTick: number;
    divergence: { path: string; names: string; recorded: string; changed: string } | null;
    ticksDiffering: number;
  }>;
  summary: { agentsAffected: number; agentsAffectedOnUnchangedTrees: number; ticksDiffering: number };
  truncated: string | null;
}
