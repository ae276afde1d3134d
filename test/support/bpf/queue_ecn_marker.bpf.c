// SPDX-License-Identifier: MIT
/*
 * queue_ecn_marker: the congestion point of the routed congestion test (issue 14), as a tc
 * program on the egress of the router's bottleneck interface, in front of its TBF qdisc.
 *
 * This kernel has no RED qdisc, and nftables' `limit rate over` keeps a bucket of a whole second
 * of its rate (nft_limit sizes the bucket from the rate's time unit), so neither can mark by the
 * queue at millisecond scale. This program can: it keeps a virtual copy of the TBF's backlog (it
 * drains at the shaper's rate between packets, and a packet that would not fit in the TBF's limit
 * is not added, since TBF drops it), and marks ECN-capable RoCE v2 packets CE as they join it, by
 * RED on the backlog they find (no mark up to KMIN, probability PMAX·(q − KMIN)/(KMAX − KMIN) up
 * to KMAX, every packet above), as a switch marks on its egress queue (DCQCN paper §4). Not-ECT
 * packets are never marked. The IPv4 checksum is updated; the ICRC masks the ECN bits.
 *
 * Compile-time parameters (-D): RATE_BPS, LIMIT_BYTES, KMIN_BYTES, KMAX_BYTES, PMAX_PPM.
 * The map `marker_stats` holds what it saw and marked, for the test to read with bpftool.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <linux/pkt_cls.h>
#include <stddef.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#ifndef RATE_BPS
#define RATE_BPS 200000000ULL
#endif
#ifndef LIMIT_BYTES
#define LIMIT_BYTES 200000ULL
#endif
#ifndef KMIN_BYTES
#define KMIN_BYTES 10000ULL
#endif
#ifndef KMAX_BYTES
#define KMAX_BYTES 100000ULL
#endif
#ifndef PMAX_PPM
#define PMAX_PPM 200000ULL
#endif
#define ROCE_PORT 4791

struct marker_state {
	struct bpf_spin_lock lock;
	__u64 last_ns;
	__u64 backlog;
};

struct marker_stats {
	__u64 ect_packets;
	__u64 marked;
	__u64 max_backlog;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct marker_state);
} marker_queue SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct marker_stats);
} marker_stats SEC(".maps");

/* The backlog this packet finds, after draining since the last one; adds it when TBF will keep it. */
static __always_inline __u64 join_queue(struct marker_state *s, __u32 len)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 q;

	bpf_spin_lock(&s->lock);
	__u64 elapsed = now > s->last_ns ? now - s->last_ns : 0;
	/* Bytes the shaper sends in `elapsed` ns; elapsed is capped so the product cannot overflow. */
	if (elapsed > 10000000000ULL)
		elapsed = 10000000000ULL;
	__u64 drained = elapsed * (RATE_BPS / 8) / 1000000000ULL;
	s->backlog = s->backlog > drained ? s->backlog - drained : 0;
	s->last_ns = now;
	q = s->backlog;
	if (q + len <= LIMIT_BYTES)
		s->backlog = q + len;
	bpf_spin_unlock(&s->lock);
	return q;
}

static __always_inline int red_marks(__u64 q)
{
	if (q <= KMIN_BYTES)
		return 0;
	if (q >= KMAX_BYTES)
		return 1;
	__u64 p_ppm = PMAX_PPM * (q - KMIN_BYTES) / (KMAX_BYTES - KMIN_BYTES);
	return (bpf_get_prandom_u32() % 1000000U) < p_ppm;
}

SEC("tc")
int queue_ecn_marker(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	__u32 zero = 0;

	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end)
		return TC_ACT_OK;
	struct marker_state *s = bpf_map_lookup_elem(&marker_queue, &zero);
	struct marker_stats *st = bpf_map_lookup_elem(&marker_stats, &zero);
	if (!s || !st)
		return TC_ACT_OK;
	/* Every packet joins the queue; only ECN-capable RoCE v2 packets are candidates for a mark. */
	__u64 q = join_queue(s, skb->len);
	if (q > st->max_backlog)
		st->max_backlog = q;
	if (ip->protocol != IPPROTO_UDP || ip->ihl != 5)
		return TC_ACT_OK;
	struct udphdr *udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end || udp->dest != bpf_htons(ROCE_PORT))
		return TC_ACT_OK;
	__u8 tos = ip->tos;
	__u8 ecn = tos & 3;
	if (ecn == 0 || ecn == 3)
		return TC_ACT_OK;
	__sync_fetch_and_add(&st->ect_packets, 1);
	if (!red_marks(q))
		return TC_ACT_OK;
	/* tos is the low byte of the first 16-bit word of the header (version/ihl, tos). */
	__u16 old_word = bpf_htons(((__u16)(4 << 4 | 5) << 8) | tos);
	__u8 new_tos = tos | 3;
	__u16 new_word = bpf_htons(((__u16)(4 << 4 | 5) << 8) | new_tos);
	if (bpf_l3_csum_replace(skb, ETH_HLEN + offsetof(struct iphdr, check), old_word, new_word, 2) < 0)
		return TC_ACT_OK;
	if (bpf_skb_store_bytes(skb, ETH_HLEN + offsetof(struct iphdr, tos), &new_tos, 1, 0) < 0)
		return TC_ACT_OK;
	__sync_fetch_and_add(&st->marked, 1);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
