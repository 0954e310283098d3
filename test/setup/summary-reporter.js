/**
 * Ends a jest run with the slowest test files (wall seconds, the 15 slowest, so CI's time budget
 * can be kept where it is spent: docs/decisions.md, "CI's time") and one plain line,
 * `tests: N passed, N failed, N skipped`, so CI can read the outcome without knowing jest's own
 * summary format.
 */
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const timed = results.testResults
      .filter((r) => r.perfStats && r.perfStats.end > r.perfStats.start)
      .map((r) => ({ file: r.testFilePath.replace(process.cwd() + '/', ''), seconds: (r.perfStats.end - r.perfStats.start) / 1000 }))
      .sort((a, b) => b.seconds - a.seconds);
    if (timed.length > 1) {
      const total = timed.reduce((s, r) => s + r.seconds, 0);
      process.stdout.write(`\nslowest test files (of ${timed.length}, ${total.toFixed(0)} s in all):\n`);
      for (const r of timed.slice(0, 15)) process.stdout.write(`  ${r.seconds.toFixed(1).padStart(7)} s  ${r.file}\n`);
    }
    const skipped = results.numPendingTests + results.numTodoTests;
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    process.stdout.write(`\ntests: ${results.numPassedTests} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
module.exports = SummaryReporter;
