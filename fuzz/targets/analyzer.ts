/**
 * Fuzz target: the analyzer on a whole capture (conversations, flags, episodes, rule checks,
 * CM connections, capture quality), then the JSON document and the text report built from it.
 * A damaged capture is analysed as far as it reads; nothing here may throw.
 */
import { analyzeCapture } from '../../analysis/analyzer';
import { analysisDocument } from '../../analysis/document';
import { textReport } from '../../analysis/text-report';

export function fuzz(data: Uint8Array): void {
  const r = analyzeCapture(data, { allFrames: true });
  const doc = analysisDocument(r, 'fuzz.pcap');
  JSON.stringify(doc);
  textReport(doc, { episodes: true, messages: true, frames: true });
}
