/**
 * A set of named counters as a plain record (rxe and mlx5 expose theirs by name): one
 * zeroed record per owner, so two devices or two QPs never share a counter.
 */
export function zeroCounters<N extends string>(names: readonly N[]): Record<N, number> {
  return Object.fromEntries(names.map((n) => [n, 0])) as Record<N, number>;
}
