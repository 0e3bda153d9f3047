#!/usr/bin/env node
// `npm run pack:client`: builds the @canopy-bt/client package from a clean slate (src/client and the
// src/protocol it imports, into packages/client/dist) and packs it into a tarball to install elsewhere.
// Extra arguments go to `npm pack` (e.g. `--pack-destination DIR`).

import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = join(repo, 'packages', 'client');
const run = (cmd, args) => execFileSync(cmd, args, { cwd: repo, stdio: 'inherit', shell: process.platform === 'win32' });

// A file removed from src/ must not live on in the tarball: tsc never deletes old output.
rmSync(join(pkg, 'dist'), { recursive: true, force: true });
run(process.execPath, [join(repo, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(pkg, 'tsconfig.json')]);
run('npm', ['pack', pkg, ...process.argv.slice(2)]);
