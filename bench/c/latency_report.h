// SPDX-License-Identifier: MIT
/*
 * latency_report.h: the JSON line the C ping-pong references print (udp_pingpong.c,
 * xdp_pingpong.c): round trips in µs as min, nearest-rank percentiles (as
 * apps/perftest/measurement.ts takes its own), max, mean and a histogram of
 * log-spaced buckets, four to an octave (bucket k holds [2^(k/4), 2^((k+1)/4)) µs,
 * below 1 µs counts in the first), the buckets `roce pingpong --json` reports.
 */
#ifndef ROCE_BENCH_LATENCY_REPORT_H
#define ROCE_BENCH_LATENCY_REPORT_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int latency_cmp_u64(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static double latency_pct_us(const uint64_t *sorted, long n, double p) {
  long i = (long)ceil(p * (double)n) - 1;
  if (i < 0) i = 0;
  if (i > n - 1) i = n - 1;
  return (double)sorted[i] / 1000.0;
}

/* Prints the report of `n` round trips in ns (sorts `rtt_ns` in place). */
static void latency_report(uint64_t *rtt_ns, long n, size_t size) {
  long buckets[128] = {0};
  double sum = 0;
  for (long i = 0; i < n; i++) {
    const double us = (double)rtt_ns[i] / 1000.0;
    sum += us;
    int k = us < 1.0 ? 0 : (int)floor(log2(us) * 4.0);
    if (k > 127) k = 127;
    buckets[k]++;
  }
  qsort(rtt_ns, (size_t)n, sizeof(uint64_t), latency_cmp_u64);
  printf("{\"ok\":true,\"iters\":%ld,\"size\":%zu,\"min\":%.3f,\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"p999\":%.3f,\"max\":%.3f,\"avg\":%.3f,\"histogram\":[",
         n, size, (double)rtt_ns[0] / 1000.0, latency_pct_us(rtt_ns, n, 0.5), latency_pct_us(rtt_ns, n, 0.9), latency_pct_us(rtt_ns, n, 0.99),
         latency_pct_us(rtt_ns, n, 0.999), (double)rtt_ns[n - 1] / 1000.0, sum / (double)n);
  int first = 1;
  for (int k = 0; k < 128; k++) {
    if (buckets[k] == 0) continue;
    printf("%s[%.3f,%ld]", first ? "" : ",", exp2((double)k / 4.0), buckets[k]);
    first = 0;
  }
  printf("]}\n");
}

#endif
