#!/usr/bin/env node
'use strict';
/**
 * npm's `install` step, in this repository and in a project that installs roce-ts: builds the
 * optional native shim (native/) with scripts/build-native.sh --optional, which prints one line
 * saying why when it cannot and lets the install succeed. The pure-TypeScript library and the
 * commands that do not open a network interface work without the shim.
 */
const { spawnSync } = require('node:child_process');
const path = require('node:path');

if (process.platform !== 'linux') {
  process.stderr.write(
    `roce-ts: the native shim (AF_XDP, AF_PACKET) is for Linux; not built on ${process.platform}, roce perftest and roce pingpong will not run\n`,
  );
  process.exit(0);
}
const r = spawnSync('bash', [path.join(__dirname, 'build-native.sh'), '--optional'], { stdio: 'inherit' });
if (r.error !== undefined) {
  process.stderr.write(`roce-ts: the native shim was not built (bash could not be started: ${r.error.message}), so roce perftest/pingpong cannot run\n`);
}
process.exit(0);
