// Every built-in node kind, in the order the docs and the JSON Schema list them.

import type { NodeKind } from '../node.js';
import { action } from './action.js';
import { all } from './all.js';
import { condition } from './condition.js';
import { fail, running, succeed } from './constant.js';
import { cooldown } from './cooldown.js';
import { delay } from './delay.js';
import { failer, succeeder } from './force.js';
import { inverter } from './inverter.js';
import { keepRunningUntilFailure } from './keepRunningUntilFailure.js';
import { log } from './log.js';
import { once } from './once.js';
import { parallel } from './parallel.js';
import { random } from './random.js';
import { repeat, retry } from './repeat.js';
import { rotator } from './rotator.js';
import { selector } from './selector.js';
import { sequence } from './sequence.js';
import { set } from './set.js';
import { subtree } from './subtree.js';
import { timeLimit } from './timeLimit.js';
import { wait } from './wait.js';

export const BUILTIN_NODES: readonly NodeKind[] = [
  sequence, selector, parallel, all, random, rotator,
  inverter, succeeder, failer, repeat, retry, keepRunningUntilFailure, cooldown, timeLimit, delay, once,
  action, condition, wait, set, log, succeed, fail, running, subtree,
];
