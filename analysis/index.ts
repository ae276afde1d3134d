/**
 * `roce-ts/analysis`: what `roce analyze` finds in a capture, as a library. Analyse capture bytes
 * or a file, turn the result into the document `roce analyze --json` prints or the text report,
 * and judge it as `--fail-on` does.
 */
export { analyzeCapture, analyzeFile, type AnalysisResult, type AnalyzerOptions } from './analyzer';
export { analysisDocument, ANALYSIS_FORMAT_VERSION, type AnalysisDocument } from './document';
export { textReport, type ReportOptions } from './text-report';
export { failOnFindings, failOnNames, parseFailOn, type FailOn } from './fail-on';
export { MessageOp, RuleId, type Episode, type FrameResult, type Message, type Side, type Violation } from './types';
