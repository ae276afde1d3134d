/**
 * Per-frame expert flags of `roce analyze`, in the spirit of Wireshark's TCP
 * analysis flags. The names are stable JSON keys (docs/analysis.md).
 */
export const FLAG_NAMES = [
  'retransmission',
  'duplicateRequest',
  'outOfSequence',
  'duplicateFrame',
  'nakSeqErr',
  'nakInvReq',
  'nakRemAccess',
  'nakRemOp',
  'rnrNak',
  'impliedAck',
  'ackCoalesced',
  'icrcBad',
  'malformed',
  'cnp',
  'ecnCe',
  'notCaptured',
  'ackedUnseen',
  'truncated',
] as const;
export type FlagName = (typeof FLAG_NAMES)[number];

/** One line per flag, for help text and the docs. */
export const FLAG_HELP: Readonly<Record<FlagName, string>> = {
  retransmission: 'a request whose PSN this flow already carried (sent again by the requester)',
  duplicateRequest: 'a request for a PSN the responder had already acknowledged (a duplicate to the responder)',
  outOfSequence: 'a request whose PSN is beyond the next one expected from the requests captured so far (a hole before it)',
  duplicateFrame: 'a copy of the previous frame of its flow, same PSN and ICRC, within 8 µs and nothing in between (a network duplicate)',
  nakSeqErr: 'NAK: PSN sequence error (AETH 0x60)',
  nakInvReq: 'NAK: invalid request (AETH 0x61)',
  nakRemAccess: 'NAK: remote access error (AETH 0x62)',
  nakRemOp: 'NAK: remote operational error (AETH 0x63)',
  rnrNak: 'RNR NAK (AETH 0x20-0x3F)',
  impliedAck: 'a response other than an ACK (NAK, RNR NAK, READ response, atomic ACK) that acknowledges earlier requests',
  ackCoalesced: 'an ACK that acknowledges more than one request that asked for an ACK (AckReq)',
  icrcBad: 'the ICRC does not match the contents',
  malformed:
    "the frame does not decode: its lengths do not add up, its opcode is unknown, or it breaks its opcode's payload rule (a frame the capture cut short is truncated, not malformed)",
  cnp: 'a RoCE v2 congestion notification packet (opcode 0x81)',
  ecnCe: 'IP ECN field is CE (congestion experienced)',
  notCaptured:
    'previous requests not captured: this request skips PSNs its requester sent (in order) that the responder then acknowledged; a capture gap, not a hole on the wire',
  ackedUnseen: 'a response that acknowledges requests the capture never showed (a capture gap, or a capture that started mid-conversation)',
  truncated:
    'the capture kept only the start of the frame (a snaplen, whether or not the record says so): the headers it holds analysed, the ICRC and the rest not captured',
};

/** A small bit set of flags per frame. */
export const FLAG_BIT: Readonly<Record<FlagName, number>> = Object.fromEntries(FLAG_NAMES.map((n, i) => [n, 1 << i])) as Record<FlagName, number>;

export function flagList(bits: number): FlagName[] {
  const out: FlagName[] = [];
  for (let i = 0; i < FLAG_NAMES.length; i++) if ((bits & (1 << i)) !== 0) out.push(FLAG_NAMES[i] as FlagName);
  return out;
}

export function emptyFlagCounts(): Record<FlagName, number> {
  return Object.fromEntries(FLAG_NAMES.map((n) => [n, 0])) as Record<FlagName, number>;
}
