/** `roce analyze --audit`: the guessability report of a capture, as text and JSON; options of the transport report refused with it. */
import * as path from 'node:path';
import { roce } from '../support/cli';

const CM = path.resolve(__dirname, '../../captures/cm-exchanges.pcap');

test('JSON: the frames counted and a judgement per host and kind, with the values the CM handed out', async () => {
  const r = await roce('analyze', '--audit', '--json', CM);
  expect(r.code).toBe(0);
  const j = JSON.parse(r.out);
  expect(j).toMatchObject({ file: CM, frames: 14, roceFrames: 14, verdict: 'unknown' });
  expect(j.judgements).toEqual(
    expect.arrayContaining([expect.objectContaining({ host: '198.18.0.2', kind: 'startPsn', sample: ['0x7a1b2c'], verdict: 'unknown' })]),
  );
});

test('text: the table and the overall verdict', async () => {
  const r = await roce('analyze', '--audit', CM);
  expect(r.code).toBe(0);
  expect(r.out).toMatch(/^.*cm-exchanges\.pcap: 14 frames, 14 RoCE\nguessability of the names each host hands out/);
  expect(r.out).toMatch(/^ {2}198\.18\.0\.1 +QPN +\d+ +too few values/m);
  expect(r.out).toMatch(/overall: unknown\n$/);
});

test('--audit with an option of the transport report is a usage error', async () => {
  const r = await roce('analyze', '--audit', '--messages', CM);
  expect(r.code).toBe(2);
  expect(r.err).toMatch(/--audit .* does not take --messages/);
});
