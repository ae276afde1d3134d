/**
 * Preloaded into a command a benchmark runs (`node -r dist/bench/report-rss.js ...`): at exit it
 * writes the process's peak RSS, worker threads included, to stderr as `maxRssKiB=N`.
 */
process.on('exit', () => {
  process.stderr.write(`\nmaxRssKiB=${process.resourceUsage().maxRSS}\n`);
});
