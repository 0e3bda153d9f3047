// The catalog: every code and message type is defined once, described, and documented in
// docs/protocol.md (fastify's errors.js + errors.test.js pattern).

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  CLIENT_ERRORS,
  CLIENT_MESSAGE_TYPES,
  ClientErrorCode,
  ERRORS,
  ErrorCode,
  HTTP_ERRORS,
  HttpErrorCode,
  LIMITS,
  MessageType,
  Msg,
  SERVER_MESSAGE_TYPES,
} from '../../src/protocol/index.js';

const doc = readFileSync(new URL('../../docs/protocol.md', import.meta.url), 'utf8');

describe('error catalog', () => {
  it('has exactly the codes of the contract, each named after itself', () => {
    expect(Object.keys(ErrorCode).toSorted()).toEqual(
      [
        'E_PROTOCOL', 'E_VERSION', 'E_UNKNOWN_MESSAGE', 'E_BAD_FIELD', 'E_UNKNOWN_TREE', 'E_DUPLICATE_AGENT',
        'E_UNKNOWN_AGENT', 'E_UNKNOWN_KEY', 'E_LIMIT', 'E_PLUGIN', 'E_INTERNAL', 'E_RECORDING',
        'E_RELOAD',
      ].toSorted(),
    );
    for (const [key, value] of Object.entries(ErrorCode)) expect(value).toBe(key);
    for (const [key, value] of Object.entries(ClientErrorCode)) expect(value).toBe(key);
  });

  it('describes every code, and client codes never collide with protocol codes', () => {
    expect(Object.keys(ERRORS).toSorted()).toEqual(Object.keys(ErrorCode).toSorted());
    expect(Object.keys(CLIENT_ERRORS).toSorted()).toEqual(Object.keys(ClientErrorCode).toSorted());
    for (const info of [...Object.values(ERRORS), ...Object.values(CLIENT_ERRORS)]) expect(info.description.length).toBeGreaterThan(10);
    for (const code of Object.keys(ClientErrorCode)) expect(Object.keys(ErrorCode)).not.toContain(code);
  });

  it('documents every code in docs/protocol.md, in a table row', () => {
    expect(Object.keys(HTTP_ERRORS).toSorted()).toEqual(Object.keys(HttpErrorCode).toSorted());
    const undocumented = [...Object.keys(ErrorCode), ...Object.keys(ClientErrorCode), ...Object.keys(HttpErrorCode)].filter(
      (code) => !new RegExp(`^\\| \`${code}\` \\|`, 'm').test(doc),
    );
    expect(undocumented).toEqual([]);
  });

  it('message templates produce the documented text', () => {
    expect(Msg.badField('spawn.agents[3].tree', 'expected a string')).toBe('spawn.agents[3].tree: expected a string');
    expect(Msg.version(2)).toBe('protocol version 2 is not supported; this server speaks 1');
    expect(Msg.unknownMessage('dance')).toBe('unknown message type "dance"');
    expect(Msg.helloFirst('spawn')).toBe('the first message must be hello, got "spawn"');
    expect(Msg.unknownTree('dragon')).toBe('unknown tree "dragon"');
    expect(Msg.duplicateAgent(7)).toBe('agent 7 already exists in this session');
    expect(Msg.unknownAgent('orc-2')).toBe('no agent "orc-2" in this session');
    expect(Msg.unknownKey('targt', 'guard')).toBe('blackboard key "targt" is not declared by tree "guard"');
    expect(Msg.frameTooLarge(20, 10)).toBe('frame of 20 bytes exceeds the limit of 10 bytes');
    expect(Msg.limit('agents in this session', 1000)).toBe('agents in this session exceeds the limit of 1000');
    expect(Msg.moreEntries(5)).toBe('5 more entries were refused');
    expect(Msg.plugin('los', 'boom')).toBe('plugin "los" threw: boom');
    expect(Msg.internal()).toBe('internal error; the service logged the details');
    for (const line of ['hello.hz: expected a number in (0, 1000]', 'spawn.agents[3].tree: expected a string', 'unknown message type "dance"']) {
      expect(doc).toContain(line);
    }
  });
});

describe('message types', () => {
  it('every type is named after itself and is either a client or a server message', () => {
    for (const [key, value] of Object.entries(MessageType)) expect(value).toBe(key);
    expect([...CLIENT_MESSAGE_TYPES, ...SERVER_MESSAGE_TYPES].toSorted()).toEqual(Object.values(MessageType).toSorted());
  });

  it('documents every message type in docs/protocol.md', () => {
    expect(Object.values(MessageType).filter((t) => !doc.includes(`\`${t}\``))).toEqual([]);
  });
});

describe('limits', () => {
  it('documents the fixed limits', () => {
    expect(doc).toContain(`| entries in any list (\`agents\`, \`ids\`, \`set\`, \`results\`, rows) | ${LIMITS.maxListLength.toLocaleString('en-US')} |`);
    expect(doc).toContain(`| nesting depth | ${LIMITS.maxDepth} |`);
    expect(doc).toContain(`| label | ≤ ${LIMITS.maxLabelLength} characters |`);
  });
});
