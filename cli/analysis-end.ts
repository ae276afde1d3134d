/**
 * What the commands that analyse a capture (`roce analyze`, `roce ladder`, `roce plot`) share about
 * how an analysis ends: the conversation limit they take, and the words and exit status for a
 * capture that ends early or an analysis that stopped before it. Each draws or reports the frames
 * before the problem, and none exits 0 on a capture it did not read to the end (of the frames it
 * was asked for: `--frames A-B` ends the reading after frame B).
 */
import { type OptionSpec, type ParsedArgs, intValue } from './args';
import type { Output } from './output';
import { type AnalysisEnd, DEFAULT_MAX_CONVERSATIONS } from '../analysis/analyzer';
import { analysisStopText } from '../analysis/text-report';

/** The most --max-conversations takes: far past what the default heap holds (about 3.7 KB each), a guard against typos more than a limit. */
const MAX_CONVERSATIONS_OPTION = 100_000_000;

export const MAX_CONVERSATIONS_SPEC: OptionSpec = {
  name: 'max-conversations',
  kind: 'string',
  value: 'N',
  help: `end the analysis at the frame that would start conversation N+1 (default ${DEFAULT_MAX_CONVERSATIONS}): each costs about 3.7 KB until the end; a capture whose PSNs jump at random starts one per frame`,
};

/** --max-conversations, or the default. */
export function maxConversationsOf(args: ParsedArgs): number {
  const text = args.values.get('max-conversations');
  return text === undefined ? DEFAULT_MAX_CONVERSATIONS : intValue(text, 'max-conversations', 1, MAX_CONVERSATIONS_OPTION);
}

/** Says on standard error how the analysis of `name` ended early, if it did; returns the exit status (1 if it did). */
export function reportAnalysisEnd(command: string, name: string, ended: AnalysisEnd, out: Output): 0 | 1 {
  let status: 0 | 1 = 0;
  if (ended.captureError !== null) {
    out.stderr(`roce ${command}: ${name}: capture ends early at byte ${ended.captureError.offset}: ${ended.captureError.reason}\n`);
    status = 1;
  }
  if (ended.stopped !== null) {
    out.stderr(`roce ${command}: ${name}: ${analysisStopText(ended.stopped)}\n`);
    status = 1;
  }
  return status;
}
