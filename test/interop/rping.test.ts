/**
 * Interop with Linux rdma_rxe: librdmacm's rping (unmodified, in a qemu guest) against
 * `roce rping`, in both roles, -C 10 with -S 64 and 65535 (rping's largest size: it refuses
 * -S 65536, "valid range is 26 to 65535"), -v and -V on both ends; and a connection to a port
 * nobody listens on, which the guest's kernel CM rejects (REJ reason 8, invalid service ID) and
 * `roce rping` reports with that reason. The host side is given no -d: it finds the tap from -a.
 *
 * The lab starts the other side of a step once an RDMA CM listener is up (a guest cm_id in state
 * LISTEN, or the roce-ts server's ROCE_READY_FILE): see docs/interop.md.
 * Run alone with: npm run test:interop -- -t rping   (see docs/interop.md)
 *
 * @group interop
 */
import { type LabRun, type Step, interopSkipReason, runLab } from './lab';
import { expectCleanCapture, stepOf } from './checks';
import { fillPingData, cString } from '../../apps/rping/ping-data';

const skip = interopSkipReason();
const d = skip === null ? describe : describe.skip;
if (skip !== null) test.skip(`rxe rping interop [skipped: ${skip}]`, () => undefined);

const COUNT = 10;
const PORT = 7174;

interface Case {
  id: number;
  name: string;
  guestRole: 'server' | 'client';
  size: number;
}

const CASES: readonly Case[] = [64, 65535].flatMap((size, k) =>
  (['server', 'client'] as const).map((guestRole, j) => ({
    id: 1 + 2 * k + j,
    name: `-C ${COUNT} -S ${size}, ${guestRole === 'server' ? 'roce-ts client' : 'roce-ts server'}`,
    guestRole,
    size,
  })),
);
const REJECT_STEP = 5;

function steps(): Step[] {
  const s: Step[] = CASES.map((c) => ({
    id: c.id,
    guestRole: c.guestRole,
    port: PORT,
    timeoutS: 120,
    guest: c.guestRole === 'server' ? `rping -s -a 0.0.0.0 -C ${COUNT} -S ${c.size} -V -v` : `rping -c -a @PEER@ -C ${COUNT} -S ${c.size} -V -v`,
    host:
      c.guestRole === 'server'
        ? `$ROCE rping -c -a $RXE_GUEST_IP -C ${COUNT} -S ${c.size} -V -v --json --timeout 60`
        : `$ROCE rping -s -a $RXE_HOST_IP -S ${c.size} -v --json --timeout 60`,
  }));
  // The wrong port first (exit 1 expected), then the right one so that the guest's server ends.
  s.push({
    id: REJECT_STEP,
    guestRole: 'server',
    port: PORT,
    timeoutS: 120,
    guest: `rping -s -a 0.0.0.0 -p ${PORT} -C 1 -v`,
    host: `$ROCE rping -c -a $RXE_GUEST_IP -p ${PORT + 1} -C 1 --json --timeout 60; rc=$?; $ROCE rping -c -a $RXE_GUEST_IP -p ${PORT} -C 1 --timeout 60 && [ $rc = 1 ]`,
  });
  return s;
}

function lines(size: number, prefix: string): string[] {
  const b = new Uint8Array(size);
  return Array.from({ length: COUNT }, (_, n) => {
    fillPingData(b, n);
    return `${prefix}ping data: ${cString(b)}`;
  });
}

d('librdmacm rping against roce rping (rdma_rxe guest, netdev MTU 1500)', () => {
  let run: LabRun;
  beforeAll(async () => {
    run = await runLab('rping', steps(), { mtu: 1500 });
  }, 900_000);

  test('the guest booted, ran every step and powered off; the capture decodes with valid ICRCs', () => {
    expect(run.console).toContain('RXE-END');
    expectCleanCapture(run.capture);
  });

  test.each(CASES.map((c) => [c.name, c] as const))('%s', (_n, c) => {
    const s = stepOf(run, c.id);
    const why = `guest: ${s.guestOut.slice(0, 800)}\nhost: ${s.hostOut.slice(0, 800)} ${s.hostErr.slice(0, 800)}`;
    expect({ guest: s.guestRc, host: s.hostRc, why }).toMatchObject({ guest: 0, host: 0 });
    expect(s.hostJson).toMatchObject({ ok: true, test: 'rping', role: c.guestRole === 'server' ? 'client' : 'server', size: c.size, pings: COUNT });
    // The guest prints what it read (server) or what came back (client); our side's -v lines are the same text.
    // The lab's serial console breaks very long lines, so the guest's are compared by their first 200 characters.
    const head = (l: string): string => l.slice(0, 200);
    const guestLines = s.guestOut.split('\n').filter((l) => l.includes('ping data: '));
    expect(guestLines.map(head)).toEqual(lines(c.size, c.guestRole === 'server' ? 'server ' : '').map(head));
    expect(s.hostJson?.['pingData']).toEqual(lines(c.size, c.guestRole === 'server' ? '' : 'server '));
    if (c.guestRole === 'server') expect(s.hostJson?.['verified']).toBe(COUNT);
  });

  test("a port nobody listens on: REJECTED with reason 8 from the guest's CM; the right port then works", () => {
    const s = stepOf(run, REJECT_STEP);
    expect({ guest: s.guestRc, host: s.hostRc, why: `${s.hostOut} ${s.hostErr}` }).toMatchObject({ guest: 0, host: 0 });
    expect(s.hostJson).toMatchObject({ ok: false, test: 'rping', code: 'ROCE_ERR_RPING_REJECTED' });
    expect(String(s.hostJson?.['error'])).toMatch(/REJ reason 8 \(/);
  });
});
