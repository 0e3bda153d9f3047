// Writes trees/schema.json, the JSON Schema editors use for tree files, from the built-in node catalog.
// Usage: npx tsx src/tools/gen-schema.ts [out-file]   (a test fails when the committed file is stale)

import { writeFile } from 'node:fs/promises';
import { NodeCatalog, formatTreeSchema } from '../bt/index.js';

const out = process.argv[2] ?? 'trees/schema.json';
await writeFile(out, formatTreeSchema(new NodeCatalog()));
console.log(`wrote ${out}`);
