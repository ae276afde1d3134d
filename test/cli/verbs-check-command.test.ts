/**
 * `roce verbs-check` against itself over the memory test mode: every memory-protection case ends as
 * it ends between rxe and itself (test/interop/memory-protection.test.ts runs the same cases against
 * rxe 6.12), and bad arguments are usage errors.
 */
import { freePort } from '../oob/support';
import { roce } from '../support/cli';

function cmd(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  return roce('verbs-check', ...argv);
}

interface Case {
  name: string;
  status: number | null;
  saw: string;
}

test('requester and responder: windows, SEND with invalidate, LOCAL_INV, ATOMIC WRITE, FLUSH and fast registration each end as between rxe and itself', async () => {
  const port = String(await freePort());
  const common = ['--driver', 'memory', '-p', port, '--json', '--timeout', '5'];
  const [resp, req] = await Promise.all([
    cmd('-d', 'sim-b', '--bind', '127.0.0.1', '-r', 'responder', ...common),
    cmd('127.0.0.1', '-d', 'sim-a', '-r', 'requester', ...common),
  ]);
  expect([resp.code, req.code, resp.err, req.err]).toEqual([0, 0, '', '']);
  const cases = (JSON.parse(req.out) as { cases: Case[] }).cases;
  const REM_ACCESS_ERR = 10;
  expect(Object.fromEntries(cases.map((c) => [c.name, [c.status, c.saw]]))).toEqual({
    mw1_write: [0, 'qp=RTS'],
    mw2_write: [0, 'qp=RTS'],
    mw2_other_qp: [REM_ACCESS_ERR, 'qp=ERR'],
    atomic_write: [0, 'qp=RTS'],
    flush: [0, 'qp=RTS'],
    flush_no_right: [REM_ACCESS_ERR, 'qp=ERR'],
    // The receive: 32 bytes, IBV_WC_WITH_INV (8), the invalidated R_Key the window's.
    send_inv: [0, 'wc=0/128/len=32/flags=8/rkey=mw2,qp=RTS'],
    mw2_after_inv: [REM_ACCESS_ERR, 'qp=ERR'],
    mw2b_write: [0, 'qp=RTS'],
    mw2b_after_local_inv: [REM_ACCESS_ERR, 'local_inv=0,qp=ERR'],
    // An ordinary region cannot be invalidated: the SEND is acknowledged, its receive completes with
    // REM_INV_REQ_ERR (9) and the responder's QP goes to ERR (rxe_resp.c RESPST_ERR_INVALIDATE_RKEY).
    inv_user_mr: [0, 'wc=9/128,qp=ERR'],
    // A fast-registered key: used, invalidated by the peer's SEND, refused after; registered again
    // (REG_MR completes, 0) under a new key byte, the old key refused and the new one admitted.
    fr_write: [0, 'qp=RTS'],
    fr_send_inv: [0, 'wc=0/128/len=32/flags=8/rkey=fr,qp=RTS'],
    fr_after_inv: [REM_ACCESS_ERR, 'qp=ERR'],
    fr_rereg_old: [REM_ACCESS_ERR, 'reg_mr=0,qp=ERR'],
    fr_rereg: [0, 'qp=RTS'],
  });
  // The responder's own account is the one the requester was given.
  const mine = (JSON.parse(resp.out) as { cases: Case[] }).cases;
  expect(mine.map((c) => [c.name, c.saw])).toEqual(cases.map((c) => [c.name, c.saw]));
}, 30_000);

test.each([
  [['-d', 'x'], /--role must be requester or responder/],
  [['-d', 'x', '-r', 'both'], /--role must be requester or responder/],
  [['-r', 'requester'], /-d\/--dev IFACE is required/],
])('usage error %j', async (argv, msg) => {
  const r = await cmd(...(argv as string[]));
  expect(r.code).toBe(2);
  expect(r.err).toMatch(msg);
});
