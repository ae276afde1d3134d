#!/usr/bin/env node
'use strict';
// Thin launcher: the CLI is compiled to dist/ by `npm run build` (run by `npm install` through `prepare`).
const path = require('node:path');
const fs = require('node:fs');
const main = path.join(__dirname, '..', 'dist', 'cli', 'main.js');
if (!fs.existsSync(main)) {
  process.stderr.write('roce: the CLI is not built yet; run `npm install` (or `npm run build`) in the project root\n');
  process.exit(2);
}
require(main)
  .main(process.argv.slice(2))
  .then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      process.stderr.write(`roce: internal error: ${err && err.stack ? err.stack : err}\n`);
      process.exitCode = 70;
    },
  );
