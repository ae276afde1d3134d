/**
 * Every fuzz target: each parser that takes outside bytes. `maxLen` is libFuzzer's
 * -max_len for it (whole captures need room for several frames); the seed corpus of a target is
 * test/fuzz/corpus/<name>/ (made by fuzz/seed-corpus.ts from the test captures), and any input
 * that ever crashed a target is kept there as a regression entry.
 */
import type { FuzzTarget } from './typed-errors';
import { fuzz as decodeFrame } from './targets/decode-frame';
import { fuzz as captureFile } from './targets/capture-file';
import { fuzz as analyzer } from './targets/analyzer';
import { fuzz as replayFrontEnd } from './targets/replay-front-end';
import { fuzz as pingpongExchange } from './targets/pingpong-exchange';
import { fuzz as perftestExchange } from './targets/perftest-exchange';
import { fuzz as madCm } from './targets/mad-cm';
import { fuzz as cmAgent } from './targets/cm-agent';

export interface TargetInfo {
  name: string;
  /** The module Jazzer loads, relative to this folder. */
  module: string;
  fn: FuzzTarget;
  maxLen: number;
  what: string;
}

export const FUZZ_TARGETS: readonly TargetInfo[] = [
  {
    name: 'decode-frame',
    module: 'targets/decode-frame',
    fn: decodeFrame,
    maxLen: 4200,
    what: 'frame decoder (every link type) and its JSON, summary and field-tree renderers',
  },
  {
    name: 'capture-file',
    module: 'targets/capture-file',
    fn: captureFile,
    maxLen: 16384,
    what: 'pcap and pcapng readers, whole-file and streaming, which must agree',
  },
  { name: 'analyzer', module: 'targets/analyzer', fn: analyzer, maxLen: 16384, what: 'roce analyze: analyzer, JSON document, text report' },
  {
    name: 'replay-front-end',
    module: 'targets/replay-front-end',
    fn: replayFrontEnd,
    maxLen: 16384,
    what: 'roce replay: captured packets, conversations, CM set-up, both roles replayed',
  },
  {
    name: 'pingpong-exchange',
    module: 'targets/pingpong-exchange',
    fn: pingpongExchange,
    maxLen: 128,
    what: "rc_pingpong's out-of-band address and done messages",
  },
  {
    name: 'perftest-exchange',
    module: 'targets/perftest-exchange',
    fn: perftestExchange,
    maxLen: 256,
    what: "perftest's out-of-band messages: version, system data, MTU, key messages, bandwidth report",
  },
  { name: 'mad-cm', module: 'targets/mad-cm', fn: madCm, maxLen: 512, what: 'MAD header, CM messages, IP CM private data' },
  {
    name: 'cm-agent',
    module: 'targets/cm-agent',
    fn: cmAgent,
    maxLen: 2048,
    what: "the stack's GSI agent and CM state machine, fed MAD sequences from a third party",
  },
];
