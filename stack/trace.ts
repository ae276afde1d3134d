/**
 * Protocol events worth telling a person about: NAKs sent and received,
 * RNR waits, local ACK timeouts, go-back-N retransmissions and QPs entering
 * the error state. The device hands them to an optional listener; nothing is
 * built when there is none.
 */
import type { RecoveryTrigger } from '../base/recovery-trigger';

export type TraceEvent =
  | { kind: 'nak-sent'; timeNs: number; qpn: number; psn: number; code: number; reason: string }
  | { kind: 'rnr-nak-sent'; timeNs: number; qpn: number; psn: number; timerCode: number }
  | { kind: 'nak-received'; timeNs: number; qpn: number; psn: number; code: number }
  | { kind: 'rnr-nak-received'; timeNs: number; qpn: number; psn: number; waitUs: number }
  | { kind: 'timeout'; timeNs: number; qpn: number; psn: number; retriesLeft: number }
  | { kind: 'retransmit'; timeNs: number; qpn: number; fromPsn: number; cause: RecoveryTrigger }
  | { kind: 'qp-error'; timeNs: number; qpn: number; reason: string };

export type TraceListener = (e: TraceEvent) => void;
