/**
 * No false capture gaps where the network reordered READ requests or responses: on a capture that
 * holds every frame the requester sent (as sent, or at its own NIC with no loss), no request can be
 * missing, so the analyzer must infer none. Two ways it once did: a resend of a READ sent before
 * the path MTU was known took away the slack that READ's unknown span gave the responder's ePSN;
 * and after a sequence NAK set the ePSN back, the READ responses showing the responder took the
 * requests that overtook the NAKed one did not move it on again. And a third: a late NAK set the ePSN
 * back behind requests already sent, which the responder then got: PSNs the capture showed being
 * sent are no capture gap.
 *
 * @group unit
 */
import { analyzeCapture } from '../../analysis/analyzer';
import { runCase } from '../../apps/sweep/case-run';
import { parseCase } from '../../apps/sweep/sweep-case';
import { analyzerCapturePoint } from '../../apps/sweep/case-verdict';

test.each([
  // A READ of 4096 bytes sent before the MTU was known, its responses reordered: resent whole, then from its third PSN.
  'seed=175324 loss=0% burst=off reorder=5%/3 dup=0% mtu=256 qps=8 mix=mix bytes=32K at=host-a',
  'seed=175324 loss=0% burst=off reorder=5%/3 dup=0% mtu=256 qps=8 mix=mix bytes=32K at=sent',
  // Three READs; the third overtook the second, drew a NAK for it, and was resent after the timeout.
  'seed=475140 loss=0% reorder=5%/3 mtu=256 qps=4 mix=read bytes=32K at=sent',
  'seed=182137 loss=1% reorder=5%/3 mtu=256 qps=4 mix=read bytes=32K at=sent',
  // A NAK for 6229235 captured after 6229236..6229243 were sent, which the responder then took.
  'seed=549420 loss=2% burst=off reorder=off dup=0% mtu=2048 qps=1 mix=atomic bytes=16K at=sent',
  // A NAK for a lost SEND, and a READ sent before the MTU was known behind it.
  'seed=639658 loss=2% burst=off reorder=off dup=0% mtu=512 qps=4 mix=mix bytes=128K at=sent',
])('%s: no capture gap, no violation', (line) => {
  const c = parseCase(line);
  const r = analyzeCapture(runCase(c).capture, { capturePoint: analyzerCapturePoint(c.at) });
  expect(r.captureQuality.captureGaps).toBe(0);
  expect([...r.violationsByRule].filter(([, n]) => n > 0)).toEqual([]);
});
