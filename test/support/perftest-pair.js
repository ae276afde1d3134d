#!/usr/bin/env node
/**
 * Both ends of one `roce perftest` in one process, over the memory test mode (whose two ends,
 * sim-a and sim-b, live in one process): the server with the given arguments and --bind
 * 127.0.0.1, the client with the same and 127.0.0.1. The client's output is written as it comes;
 * the server's at the end, each line prefixed "server| ". The exit status is the client's; the
 * last line "server status N" the server's. Uses the built CLI (npm run build).
 *
 *   node test/support/perftest-pair.js VERB PORT ARGS...
 */
'use strict';
const path = require('node:path');
const dist = path.resolve(__dirname, '..', '..', 'dist', 'cli');
const { run } = require(path.join(dist, 'main.js'));
const { commandContext } = require(path.join(dist, 'command.js'));
const { memoryOutput, processOutput } = require(path.join(dist, 'output.js'));

async function main() {
  const [verb, port, ...rest] = process.argv.slice(2);
  const ctx = commandContext(process.env, true);
  const common = ['--driver', 'memory', '-p', port, ...rest];
  const so = memoryOutput();
  const server = run(['perftest', verb, '--dev', 'sim-b', '--bind', '127.0.0.1', ...common], so, ctx);
  const co = processOutput();
  const client = run(['perftest', verb, '127.0.0.1', '--dev', 'sim-a', ...common], co, ctx);
  const [sc, cc] = await Promise.all([server, client]);
  await co.flush();
  for (const l of (so.out + so.err).split('\n')) if (l !== '') process.stdout.write(`server| ${l}\n`);
  process.stdout.write(`server status ${sc}\n`);
  process.exitCode = cc;
}
main().catch((e) => {
  process.stderr.write(`${e && e.stack ? e.stack : e}\n`);
  process.exitCode = 70;
});
