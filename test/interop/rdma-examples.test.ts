/**
 * Interop with Linux rdma_rxe: librdmacm's example programs (unmodified, in a qemu guest) against
 * roce-ts, in both roles, in one boot:
 *   - ucmatose -c 4 (four RDMA CM connections, ten 100-byte SENDs each way on each, then the
 *     server's DREQs) against `roce cmatose -c 4`;
 *   - rdma_server / rdma_client (one connection, 16 bytes each way, inline) against
 *     `roce rdma-client` / `roce rdma-server`;
 *   - `roce rdma-client` to a port nobody listens on: the guest's kernel CM rejects it (REJ
 *     reason 8, invalid service ID) and roce-ts reports that reason; the right port then works.
 * The host side is given no -d: it finds the tap from -s (or -b).
 *
 * The lab starts the other side of a step once an RDMA CM listener is up (a guest cm_id in state
 * LISTEN, or the roce-ts server's ROCE_READY_FILE): see docs/interop.md.
 * Run alone with: npm run test:interop -- -t 'librdmacm examples'   (see docs/interop.md)
 *
 * @group interop
 */
import { type LabRun, type Step, interopSkipReason, runLab } from './lab';
import { expectCleanCapture, stepOf } from './checks';

const skip = interopSkipReason();
const d = skip === null ? describe : describe.skip;
if (skip !== null) test.skip(`rxe librdmacm examples interop [skipped: ${skip}]`, () => undefined);

const PORT = 7471;
const CMATOSE_SERVER_LINES = [
  'cmatose: starting server',
  'initiating data transfers',
  'completing sends',
  'receiving data transfers',
  'data transfers complete',
  'cmatose: disconnecting',
  'disconnected',
  'test complete',
  'return status 0',
];
const CMATOSE_CLIENT_LINES = [
  'cmatose: starting client',
  'cmatose: connecting',
  'receiving data transfers',
  'sending replies',
  'data transfers complete',
  'test complete',
  'return status 0',
];
const ZERO16 = '00'.repeat(16);

const STEP = { cmatoseClient: 1, cmatoseServer: 2, rdmaClient: 3, rdmaServer: 4, refused: 5 } as const;

function steps(): Step[] {
  return [
    {
      id: STEP.cmatoseClient,
      guestRole: 'server',
      port: PORT,
      timeoutS: 120,
      guest: 'ucmatose -c 4',
      host: '$ROCE cmatose -s $RXE_GUEST_IP -c 4 --json --timeout 60',
    },
    {
      id: STEP.cmatoseServer,
      guestRole: 'client',
      port: PORT,
      timeoutS: 120,
      guest: 'ucmatose -s @PEER@ -c 4',
      host: '$ROCE cmatose -b $RXE_HOST_IP -c 4 --json --timeout 60',
    },
    {
      id: STEP.rdmaClient,
      guestRole: 'server',
      port: PORT,
      timeoutS: 120,
      guest: 'rdma_server',
      host: '$ROCE rdma-client -s $RXE_GUEST_IP --json --timeout 60',
    },
    {
      id: STEP.rdmaServer,
      guestRole: 'client',
      port: PORT,
      timeoutS: 120,
      guest: 'rdma_client -s @PEER@',
      host: '$ROCE rdma-server -s $RXE_HOST_IP --json --timeout 60',
    },
    // The wrong port first (exit 1 expected), then the right one so that the guest's server ends.
    {
      id: STEP.refused,
      guestRole: 'server',
      port: PORT,
      timeoutS: 120,
      guest: 'rdma_server',
      host: `$ROCE rdma-client -s $RXE_GUEST_IP -p ${PORT + 1} --json --timeout 60; rc=$?; $ROCE rdma-client -s $RXE_GUEST_IP --timeout 60 && [ $rc = 1 ]`,
    },
  ];
}

/** The guest tool's output lines that are among `known`, in order. */
function toolLines(out: string, known: readonly string[]): string[] {
  return out
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => known.includes(l));
}

d('librdmacm examples (ucmatose, rdma_server, rdma_client) against roce-ts (rdma_rxe guest, netdev MTU 1500)', () => {
  let run: LabRun;
  beforeAll(async () => {
    run = await runLab('rdma-examples', steps(), { mtu: 1500 });
  }, 900_000);

  test('the guest booted, ran every step and powered off; the capture decodes with valid ICRCs', () => {
    expect(run.console).toContain('RXE-END');
    expectCleanCapture(run.capture);
  });

  test.each([
    ['ucmatose -c 4, roce-ts client', STEP.cmatoseClient, 'client'],
    ['ucmatose -c 4, roce-ts server', STEP.cmatoseServer, 'server'],
  ] as const)('%s', (_n, id, ourRole) => {
    const s = stepOf(run, id);
    const why = `guest: ${s.guestOut.slice(0, 1500)}\nhost: ${s.hostOut.slice(0, 1500)} ${s.hostErr.slice(0, 800)}`;
    expect({ guest: s.guestRc, host: s.hostRc, why }).toMatchObject({ guest: 0, host: 0 });
    const guestLines = ourRole === 'client' ? CMATOSE_SERVER_LINES : CMATOSE_CLIENT_LINES;
    expect(toolLines(s.guestOut, guestLines)).toEqual(guestLines);
    expect(s.hostJson).toMatchObject({ ok: true, test: 'cmatose', role: ourRole, connections: 4, messageCount: 10, messageSize: 100, established: 4 });
    expect(s.hostJson?.['lines']).toEqual(ourRole === 'client' ? CMATOSE_CLIENT_LINES : CMATOSE_SERVER_LINES);
    const conns = s.hostJson?.['perConnection'] as Array<{ received: number; sent: number; remote: { port: number } }>;
    expect(conns).toHaveLength(4);
    for (const c of conns) expect({ received: c.received, sent: c.sent }).toEqual({ received: 10, sent: 10 });
    // ucmatose's client sends back the buffer its receives landed in: the last message our server sent.
    if (ourRole === 'server') expect(s.hostJson?.['echoed']).toBe(4);
    else for (const c of conns) expect(c.remote.port).toBe(PORT);
  });

  test.each([
    ['rdma_server, roce-ts rdma-client', STEP.rdmaClient, 'client'],
    ['rdma_client, roce-ts rdma-server', STEP.rdmaServer, 'server'],
  ] as const)('%s', (_n, id, ourRole) => {
    const s = stepOf(run, id);
    const why = `guest: ${s.guestOut.slice(0, 800)}\nhost: ${s.hostOut.slice(0, 800)} ${s.hostErr.slice(0, 800)}`;
    expect({ guest: s.guestRc, host: s.hostRc, why }).toMatchObject({ guest: 0, host: 0 });
    const tool = ourRole === 'client' ? 'rdma_server' : 'rdma_client';
    expect(toolLines(s.guestOut, [`${tool}: start`, `${tool}: end 0`])).toEqual([`${tool}: start`, `${tool}: end 0`]);
    expect(s.guestOut).not.toMatch(/doesn't support IBV_SEND_INLINE/);
    expect(s.hostJson).toMatchObject({
      ok: true,
      test: ourRole === 'client' ? 'rdma_client' : 'rdma_server',
      role: ourRole,
      port: PORT,
      inline: true,
      sent: ZERO16,
      received: ZERO16,
    });
    // rdma_connect(NULL) offers the device's limits (128 on rxe and here); rdma_accept(NULL) takes what was offered.
    expect(s.hostJson).toMatchObject({ responderResources: 128, initiatorDepth: 128 });
  });

  test("a port nobody listens on: REJECTED with reason 8 from the guest's CM; the right port then works", () => {
    const s = stepOf(run, STEP.refused);
    expect({ guest: s.guestRc, host: s.hostRc, why: `${s.hostOut} ${s.hostErr}` }).toMatchObject({ guest: 0, host: 0 });
    expect(s.hostJson).toMatchObject({ ok: false, test: 'rdma_client', code: 'ROCE_ERR_RDMA_EXAMPLE_REJECTED' });
    expect(String(s.hostJson?.['error'])).toMatch(/Connection refused \(RDMA_CM_EVENT_REJECTED, REJ reason 8:/);
  });
});
