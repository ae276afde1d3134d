/**
 * The stable JSON form of a decoded frame, one object per frame, used by
 * `roce decode --json` and documented in docs/decode.md. 64-bit values and
 * the ICRC are hex strings; every other number is a plain JSON number.
 */
import { bswap32, hex32, hex64 } from './bytes';
import { type DecodedFrame, packetAddresses } from './decode';
import { decodeSyndrome } from './aeth';
import { madToJson } from './mad-json';

export interface FrameJson {
  frame: number;
  time: number;
  roce: boolean;
  [key: string]: unknown;
}

/** The JSON object for frame number `frame` (1-based) captured at `time` seconds. */
export function frameToJson(frame: number, time: number, d: DecodedFrame): FrameJson {
  if (!d.roce) return { frame, time, roce: false };
  const { src, dst } = packetAddresses(d);
  const b = d.bth;
  const out: FrameJson = {
    frame,
    time,
    roce: true,
    version: d.version,
    src,
    dst,
    srcPort: d.udp?.srcPort ?? null,
    dstPort: d.udp?.dstPort ?? null,
    opcode: b?.opcode ?? null,
    opcodeName: b === null ? null : d.info?.name ?? `UNKNOWN_0x${b.opcode.toString(16).padStart(2, '0')}`,
    se: b?.se ?? null,
    migReq: b?.migReq ?? null,
    padCount: b?.padCount ?? null,
    tver: b?.tver ?? null,
    pkey: b?.pkey ?? null,
    fecn: b?.fecn ?? null,
    becn: b?.becn ?? null,
    destQp: b?.destQp ?? null,
    ackReq: b?.ackReq ?? null,
    psn: b?.psn ?? null,
    reth: d.reth === null ? null : { va: hex64(d.reth.va), rkey: d.reth.rkey, dmaLength: d.reth.dmaLength },
    aeth: d.aeth === null ? null : { syndrome: d.aeth.syndrome, msn: d.aeth.msn, ...decodeSyndrome(d.aeth.syndrome) },
    immDt: d.immDt?.value ?? null,
    ieth: d.ieth?.rkey ?? null,
    deth: d.deth === null ? null : { qkey: d.deth.qkey, srcQp: d.deth.srcQp },
    atomicEth:
      d.atomicEth === null
        ? null
        : { va: hex64(d.atomicEth.va), rkey: d.atomicEth.rkey, swapAdd: hex64(d.atomicEth.swapAdd), compare: hex64(d.atomicEth.compare) },
    atomicAckEth: d.atomicAckEth === null ? null : { origData: hex64(d.atomicAckEth.origData) },
    xrcEth: d.xrcEth === null ? null : { xrcSrq: d.xrcEth.xrcSrq },
    rdEth: d.rdEth === null ? null : { eeContext: d.rdEth.eeContext },
    feth: d.feth === null ? null : { selectivity: d.feth.selectivity, placementType: d.feth.placementType },
    payloadLength: b === null ? null : d.payloadLength,
    truncated: d.truncated,
    payloadCaptured: b === null ? null : d.payloadCaptured,
    // The four ICRC bytes in wire order, read as one big-endian number (as tshark shows them).
    icrc: d.icrc === null ? null : hex32(bswap32(d.icrc)),
    icrcOk: d.icrcOk,
    mad: d.mad === null ? null : madToJson(d.mad),
  };
  // A transport error first; else a malformed MAD of a GSI datagram (docs/decode.md).
  const err = d.error ?? d.madError;
  if (err !== null) out['error'] = err.message;
  return out;
}
