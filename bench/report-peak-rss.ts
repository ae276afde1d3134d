/**
 * Preloaded into a measured child process (`node -r dist/bench/report-peak-rss.js ...`): when the
 * process exits it writes its peak RSS as one JSON line to stderr, so a benchmark can measure a
 * real command (the CLI as users run it) without changing it.
 */
process.on('exit', () => {
  process.stderr.write(`\n${JSON.stringify({ maxRssMiB: Math.round(process.resourceUsage().maxRSS / 1024) })}\n`);
});
