// SPDX-License-Identifier: MIT
/*
 * roce_filter: the XDP program of roce-ts's AF_XDP driver.
 *
 * Hands RoCE v2 frames (UDP destination port `roce_port`, 4791 unless the
 * loader says otherwise) to the AF_XDP socket bound to the receiving queue,
 * through `xsks_map[rx_queue_index]`. Every other frame (ARP, ICMP, TCP, UDP
 * to other ports, IP fragments after the first) is XDP_PASS: the kernel keeps
 * it. When no socket is registered for the queue (the user process exited or
 * crashed), bpf_redirect_map falls back to XDP_PASS, so the interface keeps
 * working even with the program still attached.
 *
 * Parsed: Ethernet, up to two VLAN tags (802.1Q / 802.1ad), IPv4 (with
 * options) or IPv6 (no extension headers), UDP. Declared frags-aware
 * (SEC "xdp.frags"): only the headers are read and they lie in the first
 * buffer, so frames larger than a page (multi-buffer, 9000 MTU) work.
 *
 * Loaded through libxdp, which puts it behind its multi-program dispatcher so
 * other XDP programs on the same interface keep running (it chains on
 * XDP_PASS, the default).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define MAX_QUEUES 64
#define ETH_P_8021Q_ 0x8100
#define ETH_P_8021AD_ 0x88A8
#define IP_FRAG_OFFSET_MASK 0x1fff

/* Set by the loader before the program is loaded (kept in .rodata). */
volatile const __u16 roce_port = 4791;
/* PID of the process that attached the program: lets a later loader tell a
 * live owner from one that crashed without detaching. */
volatile const __u32 roce_owner_pid = 0;

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

struct vlan_tag {
	__be16 tci;
	__be16 proto;
};

static __always_inline int is_roce(void *data, void *data_end)
{
	struct ethhdr *eth = data;
	void *cur = eth + 1;
	if (cur > data_end)
		return 0;
	__u16 proto = eth->h_proto;

#pragma unroll
	for (int i = 0; i < 2; i++) {
		if (proto != bpf_htons(ETH_P_8021Q_) && proto != bpf_htons(ETH_P_8021AD_))
			break;
		struct vlan_tag *tag = cur;
		if ((void *)(tag + 1) > data_end)
			return 0;
		proto = tag->proto;
		cur = tag + 1;
	}

	struct udphdr *udp;
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = cur;
		if ((void *)(ip + 1) > data_end)
			return 0;
		if (ip->protocol != IPPROTO_UDP || ip->ihl < 5)
			return 0;
		if (ip->frag_off & bpf_htons(IP_FRAG_OFFSET_MASK))
			return 0; /* a later fragment carries no UDP header */
		udp = cur + ip->ihl * 4;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = cur;
		if ((void *)(ip6 + 1) > data_end)
			return 0;
		if (ip6->nexthdr != IPPROTO_UDP)
			return 0;
		udp = (void *)(ip6 + 1);
	} else {
		return 0;
	}
	if ((void *)(udp + 1) > data_end)
		return 0;
	return udp->dest == bpf_htons(roce_port);
}

SEC("xdp.frags")
int roce_filter(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	if (!is_roce(data, data_end))
		return XDP_PASS;
	return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual MIT/GPL";
