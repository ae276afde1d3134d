'use strict';
/**
 * Prints every skipped test with its reason (carried in the name as "[skipped: ...]")
 * and a count, so a skip is visible in the summary and is never mistaken for a pass.
 */
class SkipReporter {
  onRunComplete(_contexts, results) {
    const skipped = [];
    for (const file of results.testResults) {
      for (const t of file.testResults) {
        if (t.status === 'pending' || t.status === 'skipped' || t.status === 'todo') skipped.push(t.fullName);
      }
    }
    if (skipped.length === 0) {
      process.stderr.write('\nSkipped tests: 0\n');
      return;
    }
    process.stderr.write(`\nSkipped tests: ${skipped.length} (not passes)\n`);
    for (const name of skipped) process.stderr.write(`  - ${name}\n`);
  }
}
module.exports = SkipReporter;
