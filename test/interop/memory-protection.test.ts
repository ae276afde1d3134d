/**
 * Memory protection against Linux rdma_rxe (6.12, whose rxe has FLUSH and ATOMIC WRITE), both ways
 * in one boot: scripts/rxe-lab/verbs-check.c in the guest (libibverbs 44) and `roce verbs-check`
 * on the host (apps/verbs-check/verbs-check.ts) run the same cases, first with rxe as the responder,
 * then with roce-ts as the responder: WRITEs through type 1 and type 2 memory windows, a type 2
 * window used from another QP, ATOMIC WRITE, FLUSH, FLUSH of a region without the flush right,
 * SEND with invalidate, a window used after that invalidation, and a window invalidated by the
 * responder's LOCAL_INV. Each case must end the same way whichever side responds: the requester's
 * completion status, and the responder's completions and QP state; the NAKs on the wire must carry
 * the same syndromes. docs/interop.md holds the table.
 *
 * FLUSH is the exception, held here as it is (docs/interop.md, open findings): rxe answers neither
 * roce-ts's FLUSH nor sends one roce-ts accepts (its FLUSH frames fail roce-ts's ICRC check).
 *
 * @group interop
 */
import { type LabRun, type Step, GUEST_IP, HOST_IP, ipText, labKernelSkipReason, runLab } from './lab';
import { describe as describeStep } from './lab';
import { AethKind, NakCode, decodeSyndrome } from '../../packets/aeth';
import { decodeFrame } from '../../packets/decode';
import { readCapture } from '../../packets/pcap';
import * as fs from 'node:fs';

const skip = labKernelSkipReason('6.12');
const d = skip === null ? describe : describe.skip;
if (skip !== null) test.skip(`rxe memory-protection interop [skipped: ${skip}]`, () => undefined);

const STEPS: Step[] = [
  // rxe responds, roce-ts requests.
  { id: 1, guestRole: 'server', port: 18530, guest: 'verbs-check -r responder -g @GID@ -p 18530', host: '$ROCE verbs-check $RXE_GUEST_IP -d $RXE_TAP -r requester -p 18530 --timeout 5 --json', timeoutS: 90 },
  // roce-ts responds, rxe requests.
  { id: 2, guestRole: 'server', port: 18531, guest: 'verbs-check -r requester -g @GID@ -p 18531', host: '$ROCE verbs-check $RXE_GUEST_IP -d $RXE_TAP -r responder -p 18531 --timeout 5 --json', timeoutS: 90 },
];

/** Cases whose outcome must not depend on who responds (FLUSH apart: see the file comment). */
const SAME = ['mw1_write', 'mw2_write', 'mw2_other_qp', 'atomic_write', 'send_inv', 'mw2_after_inv', 'mw2b_write', 'mw2b_after_local_inv'];

interface Outcome {
  status: number | null;
  /** The responder's account without key values (each side's keys differ). */
  saw: string;
}

/** `key=value` fields of a VC line. */
function fields(line: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const w of line.split(' ')) {
    const i = w.indexOf('=');
    if (i > 0) m.set(w.slice(0, i), w.slice(i + 1));
  }
  return m;
}
/** The account without the receive's flags (compared on their own: rxe's differ). */
const plainSaw = (s: string): string => s.replace(/\/flags=[0-9a-f]+/g, '');

/** Direction 1: roce-ts's requester completions (its JSON) and rxe's responder account (the guest's lines). */
function rxeResponds(run: LabRun): Map<string, Outcome> {
  const s = run.steps.get(1);
  const out = new Map<string, Outcome>();
  const cases = (s?.hostJson?.['cases'] ?? []) as { name: string; status: number | null }[];
  const saw = new Map<string, string>();
  for (const l of (s?.guestOut ?? '').split('\n')) if (l.startsWith('VC role=responder ')) saw.set(fields(l).get('case') ?? '', fields(l).get('saw') ?? '');
  for (const c of cases) out.set(c.name, { status: c.status, saw: plainSaw(saw.get(c.name) ?? 'missing') });
  return out;
}

/** Direction 2: rxe's requester completions (the guest's lines) and roce-ts's responder account (its JSON). */
function roceResponds(run: LabRun): Map<string, Outcome> {
  const s = run.steps.get(2);
  const out = new Map<string, Outcome>();
  const saw = new Map(((s?.hostJson?.['cases'] ?? []) as { name: string; saw: string }[]).map((c) => [c.name, c.saw]));
  for (const l of (s?.guestOut ?? '').split('\n')) {
    if (!l.startsWith('VC role=requester ')) continue;
    const f = fields(l);
    const st = f.get('status');
    const name = f.get('case') ?? '';
    out.set(name, { status: st === undefined || st === 'none' ? null : Number(st), saw: plainSaw(saw.get(name) ?? 'missing') });
  }
  return out;
}

/** NAK syndromes on the wire, per sender, in order. */
function naks(file: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const rec of readCapture(fs.readFileSync(file)).records) {
    const f = decodeFrame(rec.data, rec.linkType);
    if (!f.roce || f.bth === null || f.aeth === null || f.ipv4 === null || f.bth.opcode !== 0x11) continue;
    const syn = decodeSyndrome(f.aeth.syndrome);
    if (syn.kind !== AethKind.NAK && syn.kind !== AethKind.RNR_NAK) continue;
    (out[ipText(f.ipv4.src)] ??= []).push(`0x${f.aeth.syndrome.toString(16)}`);
  }
  return out;
}

d('memory windows, SEND with invalidate, LOCAL_INV, ATOMIC WRITE and FLUSH against rxe 6.12, both ways', () => {
  let run: LabRun;
  beforeAll(async () => {
    run = await runLab('memory-protection', STEPS, { kernel: '6.12', timeoutS: 240 });
  }, 300_000);

  test('both sides run every case to its end', () => {
    expect(run.console).toContain('RXE-END');
    for (const id of [1, 2]) {
      const s = run.steps.get(id);
      expect({ id, guestRc: s?.guestRc, hostRc: s?.hostRc }).toEqual({ id, guestRc: 0, hostRc: 0 });
    }
    expect([...rxeResponds(run).keys()].length).toBe(10);
    expect([...roceResponds(run).keys()].length).toBe(10);
  });

  test('each case ends the same whichever side responds: the requester\'s status, the responder\'s completions and QP state', () => {
    const a = rxeResponds(run);
    const b = roceResponds(run);
    const table = (m: Map<string, Outcome>): Record<string, Outcome | undefined> => Object.fromEntries(SAME.map((n) => [n, m.get(n)]));
    expect(table(b)).toEqual(table(a));
    // What that shared outcome is (IBTA §10.6.7: a window admits its own range and rights; a type 2
    // window only on the QP it is bound to (C10-75); an invalidated window nothing): remote access
    // error completions, the responder's QP in the error state.
    const REM_ACCESS_ERR = 10;
    expect(Object.fromEntries(SAME.map((n) => [n, a.get(n)?.status]))).toEqual({ mw1_write: 0, mw2_write: 0, mw2_other_qp: REM_ACCESS_ERR, atomic_write: 0, send_inv: 0, mw2_after_inv: REM_ACCESS_ERR, mw2b_write: 0, mw2b_after_local_inv: REM_ACCESS_ERR });
    // The SEND with invalidate: a receive of its 32 bytes whose invalidated R_Key is the window's.
    expect(a.get('send_inv')?.saw).toBe('wc=0/128/len=32/rkey=mw2,qp=RTS');
    for (const n of ['mw2_other_qp', 'mw2_after_inv']) expect(a.get(n)?.saw).toBe('qp=ERR');
    expect(a.get('mw2b_after_local_inv')?.saw).toBe('local_inv=0,qp=ERR');
  });

  test('the receive of a SEND with invalidate: roce-ts flags it IBV_WC_WITH_INV (8); rxe writes the kernel\'s IB_WC_WITH_INVALIDATE (4) into the user CQE, which libibverbs reads as IBV_WC_IP_CSUM_OK', () => {
    const flags = (step: number, text: string): string | undefined => /\/flags=([0-9a-f]+)/.exec(text)?.[1] ?? `step ${step}: ${text}`;
    const rxeSaw = (run.steps.get(1)?.guestOut ?? '').split('\n').find((l) => l.includes('case=send_inv')) ?? '';
    const roceSaw = ((run.steps.get(2)?.hostJson?.['cases'] ?? []) as { name: string; saw: string }[]).find((c) => c.name === 'send_inv')?.saw ?? '';
    // rxe_resp.c do_complete(): uwc->wc_flags = IB_WC_GRH | IB_WC_WITH_INVALIDATE (1 | 1 << 2), kernel numbering.
    expect({ rxe: flags(1, rxeSaw), roce: flags(2, roceSaw) }).toEqual({ rxe: '5', roce: '8' });
  });

  test('the NAKs on the wire: the same syndromes from rxe and from roce-ts (remote access error, 0x62, one per refused case)', () => {
    const n = naks(run.capturePath);
    expect(n[HOST_IP]).toEqual(n[GUEST_IP]);
    expect(n[GUEST_IP]).toEqual([0x60 | NakCode.REMOTE_ACCESS_ERROR, 0x60 | NakCode.REMOTE_ACCESS_ERROR, 0x60 | NakCode.REMOTE_ACCESS_ERROR].map((x) => `0x${x.toString(16)}`));
  });

  test('FLUSH as it stands: no answer from rxe to roce-ts\'s FLUSH; rxe\'s FLUSH frames fail roce-ts\'s ICRC check, so none completes', () => {
    const a = rxeResponds(run);
    const b = roceResponds(run);
    if (a.get('flush')?.status === 0) throw new Error(`rxe now answers roce-ts's FLUSH: update docs/interop.md\n${describeStep(run.steps.get(1))}`);
    expect({ flush: a.get('flush')?.status, flushNoRight: a.get('flush_no_right')?.status }).toEqual({ flush: 12, flushNoRight: 12 });
    expect({ flush: b.get('flush')?.status, flushNoRight: b.get('flush_no_right')?.status }).toEqual({ flush: null, flushNoRight: null });
  });
});
