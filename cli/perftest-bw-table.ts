/**
 * perftest's bandwidth table (RESULT_FMT and RESULT_FMT_G of perftest_parameters.h):
 * `#bytes #iterations BW peak BW average MsgRate[Mpps]`, the bandwidths in MiB/sec (perftest's
 * format_factor 0x100000 bytes) or, with --report_gbits, Gb/sec (125000000 bytes: 10^9 bits).
 */

/** The unit of the bandwidth columns, as perftest's header names it. */
export function bwUnit(reportGbits: boolean): string {
  return reportGbits ? 'Gb/sec' : 'MiB/sec';
}

/** A bandwidth in Gb/s in the table's unit. */
export function inBwUnit(gbps: number, reportGbits: boolean): number {
  return reportGbits ? gbps : (gbps * 1e9) / 8 / 0x100000;
}

/** The columns' labels and the spaces after each, as perftest's header spaces them. */
function columns(reportGbits: boolean): [string, number][] {
  const u = bwUnit(reportGbits);
  return [
    ['#bytes', 5],
    ['#iterations', 4],
    [`BW peak[${u}]`, 4],
    [`BW average[${u}]`, 3],
    ['MsgRate[Mpps]', 0],
  ];
}

/** The header line (without its newline). */
export function bwTableHeader(reportGbits: boolean): string {
  return ` ${columns(reportGbits)
    .map(([l, gap]) => l + ' '.repeat(gap))
    .join('')}`.trimEnd();
}

/**
 * One row: each figure under its label, left-aligned as perftest's REPORT_FMT prints them;
 * `peakGbps` null (not measured: perftest's noPeak) prints 0.00, as perftest does.
 */
export function bwTableRow(size: number, iterations: number, peakGbps: number | null, avgGbps: number, mpps: number, reportGbits: boolean): string {
  const values = [
    String(size),
    String(iterations),
    inBwUnit(peakGbps ?? 0, reportGbits).toFixed(2),
    inBwUnit(avgGbps, reportGbits).toFixed(2),
    mpps.toFixed(6),
  ];
  return ` ${columns(reportGbits)
    .map(([l, gap], i) => {
      const v = values[i] as string;
      return v.padEnd(Math.max(l.length + gap, v.length + 1));
    })
    .join('')}`.trimEnd();
}
