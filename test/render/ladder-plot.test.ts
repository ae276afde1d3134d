/**
 * The ladder and the plot as files: well-formed, self-contained, one arrow
 * per packet with its label and tooltip, deterministic.
 */
import * as path from 'node:path';
import { buildTimeline } from '../../analysis/timeline';
import { buildPsnSeries } from '../../analysis/psn-series';
import { ladderSvg, layoutLadder, MIN_ROW_PX } from '../../analysis/render/ladder-svg';
import { ladderHtml } from '../../analysis/render/ladder-html';
import { plotSvg } from '../../analysis/render/plot-svg';
import { xmlProblems } from './well-formed';
import { analyze, ack, req, Op, Syn } from '../analysis/frames';
import { capture } from '../analysis/frames';

const RC = path.resolve(__dirname, '..', '..', 'captures', 'rc-conversation.pcap');

describe('ladder diagram', () => {
  const t = buildTimeline(RC);
  const svg = ladderSvg(t);

  test('picks the busiest conversation and draws one arrow per packet', () => {
    expect(t.conversation).toBe(1);
    expect(t.items).toHaveLength(44);
    expect(svg.match(/<g class="pkt /g)).toHaveLength(44);
    expect(svg.match(/<line class="arrow"/g)).toHaveLength(44);
  });

  test('is well-formed SVG with no external reference', () => {
    expect(xmlProblems(svg)).toEqual([]);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.replace('xmlns="http://www.w3.org/2000/svg"', '')).not.toMatch(/https?:|href=/);
  });

  test('labels carry opcode, PSN and AETH; losses, NAKs, RNR waits and retransmissions are marked', () => {
    expect(svg).toContain('SEND_FIRST PSN 3086848');
    expect(svg).toContain('ACKNOWLEDGE PSN 3086850 · ACK credits=16');
    expect(svg).toContain('RNR NAK 0.96 ms');
    expect(svg).toContain('NAK seq err');
    expect(svg).toContain('class="pkt nak"');
    expect(svg).toContain('class="pkt rnr"');
    expect(svg).toContain('class="pkt retx"');
    expect(svg).toContain('RNR wait');
    expect(svg).toContain('without packets');
    expect(svg).toMatch(/<title>frame: 1\ntime: 0.000000000 s\nfrom: 198.18.0.1:57236/);
  });

  test('a transmission lost and resent after a NAK gets a cross', () => {
    const bytes = capture([
      req(0, Op.SEND_ONLY, 10, { len: 8 }),
      req(1, Op.SEND_ONLY, 11, { len: 8 }),
      ack(5, 10, Syn.NAK_SEQ),
      req(7, Op.SEND_ONLY, 10, { len: 8 }),
      req(8, Op.SEND_ONLY, 11, { len: 8 }),
      ack(12, 11),
    ]);
    const s = ladderSvg(buildTimeline(bytes));
    expect(s.match(/class="lost"/g)).toHaveLength(1);
    expect(analyze([]).conversations).toHaveLength(0);
  });

  test('time axis: linear, rows at least MIN_ROW_PX apart, long gaps cut', () => {
    const lay = layoutLadder(t.items);
    for (let i = 1; i < lay.ys.length; i++) expect(lay.ys[i]! - lay.ys[i - 1]!).toBeGreaterThanOrEqual(MIN_ROW_PX - 1e-9);
    expect(lay.breaks.length).toBeGreaterThan(0);
  });

  test('filters: frame range, time window, QPN; and the output is deterministic', () => {
    expect(buildTimeline(RC, { firstFrame: 34, lastFrame: 42 }).items.map((i) => i.frame)).toEqual([34, 35, 36, 37, 38, 39, 40, 41, 42]);
    expect(buildTimeline(RC, { qpn: 0x13 }).items.map((i) => i.frame)).toEqual([45, 46]);
    const w = buildTimeline(RC, { fromNs: 1_300_000, toNs: 1_420_000 });
    expect(w.items.every((i) => i.timeNs >= 1_300_000 && i.timeNs <= 1_420_000)).toBe(true);
    expect(ladderSvg(buildTimeline(RC))).toBe(svg);
  });

  test('the HTML page is self-contained with inline script and tooltips', () => {
    const html = ladderHtml(t);
    expect(html).toMatch(/^<!DOCTYPE html>/);
    expect(html).toContain('<script>');
    expect(html).toContain('id="tip"');
    expect(html.replace(/xmlns="http:\/\/www\.w3\.org\/2000\/svg"/g, '')).not.toMatch(/https?:|src=|<link/);
    expect(html.match(/data-tip="/g)).toHaveLength(44);
  });
});

describe('PSN-versus-time plot', () => {
  const { series, ended } = buildPsnSeries(RC);
  const svg = plotSvg(series, 'rc-conversation.pcap');
  test('one panel per requester flow, requests, ACKs, NAK, RNR and retransmissions drawn distinctly', () => {
    expect(series.map((s) => s.title)).toEqual([
      '#1 RC 198.18.0.1 QP 0x000011 → 198.18.0.2 QP 0x000012',
      '#2 RC 198.18.0.1 QP 0x000013 → 198.18.0.2 QP 0x000014',
      '#3 RC 198.18.0.1 QP 0x000015 → 198.18.0.2 QP 0x000016',
    ]);
    expect(ended).toEqual({ captureError: null, stopped: null });
    expect(svg.match(/<g class="panel"/g)).toHaveLength(3);
    // One more of each in the legend.
    expect(svg.match(/<line class="retx"/g)).toHaveLength(3 + 1);
    expect(svg.match(/<path class="nak"/g)).toHaveLength(4 + 1);
    expect(svg.match(/<path class="rnr"/g)).toHaveLength(1 + 1);
    expect(svg).toContain('class="ackl"');
    expect(xmlProblems(svg)).toEqual([]);
    expect(plotSvg(buildPsnSeries(RC).series, 'rc-conversation.pcap')).toBe(svg);
  });
  test('--qpn keeps one flow', () => {
    expect(buildPsnSeries(RC, { qpns: [0x16] }).series.map((s) => s.conversation)).toEqual([3]);
  });
});
