/**
 * The scenarios `roce probe` carries, one per behaviour it measures (`roce probe --list`), in the
 * YAML a user writes their own in. Kept as text here so the built command carries them.
 */

export interface BundledScenario {
  name: string;
  /** One line for `--list`. */
  summary: string;
  yaml: string;
}

export const BUNDLED_SCENARIOS: readonly BundledScenario[] = [
  {
    name: 'nak-generation',
    summary: 'DUT responder: we skip a PSN; its NAK latency and one NAK per gap',
    yaml: `name: nak-generation
description: The DUT (ib_write_bw's server) sees PSN 4 missing; it NAKs the gap once, with the PSN it expects.
dut:
  role: responder
  tool: ib_write_bw
traffic:
  message-size: 16384
  mtu: 1024
events:
  - type: skip      # our first transmission of PSN 4 never leaves
    qpn: 0
    psn: 4
    iter: 1
`,
  },
  {
    name: 'nak-retransmit',
    summary: 'DUT requester: its PSN is lost and we NAK; its retransmission latency and first PSN',
    yaml: `name: nak-retransmit
description: The DUT's (ib_write_bw's client) PSN 4 is lost; our responder NAKs the gap; the DUT goes back to PSN 4.
dut:
  role: requester
  tool: ib_write_bw
traffic:
  message-size: 16384
  mtu: 1024
events:
  - type: drop
    qpn: 0
    psn: 4
    iter: 1
`,
  },
  {
    name: 'timeout-tail-drop',
    summary: 'DUT requester: its last PSN is lost, nothing NAKs; timeout retransmission vs 4.096 µs × 2^timeout',
    yaml: `name: timeout-tail-drop
description: The last packet of the DUT's message is lost; only its local ACK timer can recover it.
dut:
  role: requester
  tool: ib_write_bw
traffic:
  message-size: 16384
  mtu: 1024
  min-retransmit-timeout: 12   # 4.096 us * 2^12 = 16.777 ms
events:
  - type: drop
    psn: 15
`,
  },
  {
    name: 'timeout-withheld-ack',
    summary: 'DUT requester: we withhold the ACK of its message; timeout retransmission and its first PSN',
    yaml: `name: timeout-withheld-ack
description: Every packet arrives but our ACK of the message does not leave; the DUT times out and resends from the first unacknowledged PSN.
dut:
  role: requester
  tool: ib_write_bw
traffic:
  message-size: 16384
  mtu: 1024
  min-retransmit-timeout: 10   # 4.194 ms
events:
  - type: withhold-ack
    psn: 15
`,
  },
  {
    name: 'retry-exhaust',
    summary: 'DUT requester: every try of its last PSN is lost; resends counted against retry_cnt',
    yaml: `name: retry-exhaust
description: The DUT resends the lost tail retry_cnt times, each after its timeout, then fails the work request.
dut:
  role: requester
  tool: ib_write_bw
traffic:
  message-size: 4096
  mtu: 1024
  min-retransmit-timeout: 8    # 1.049 ms
  max-retransmit-retry: 3
events:
  - type: drop
    psn: 3
    iter: all
`,
  },
  {
    name: 'rnr-wait',
    summary: 'DUT requester of SENDs: we answer with RNR NAKs; its wait vs the NAK timer',
    yaml: `name: rnr-wait
description: Our receive is posted only after two RNR NAKs (timer 14, 1.28 ms); the DUT waits out each before it resends.
dut:
  role: requester
  tool: ib_send_bw
traffic:
  message-size: 4096
  mtu: 1024
events:
  - type: rnr-nak
    psn: 0
    iter: 2
    timer: 14
`,
  },
  {
    name: 'read-retry',
    summary: 'DUT requester of READs: one of our READ responses is lost; its READ retry from the middle of the response',
    yaml: `name: read-retry
description: Our response at PSN 6 of a 16-packet READ is lost; the DUT asks again from PSN 6 when the next response shows the gap.
dut:
  role: requester
  tool: ib_read_bw
traffic:
  message-size: 16384
  mtu: 1024
events:
  - type: drop-read-response
    psn: 6
`,
  },
  {
    name: 'seq-nak',
    summary: 'DUT requester: we answer its PSN with a sequence NAK instead of taking it; its resend latency and first PSN',
    yaml: `name: seq-nak
description: Our responder answers the DUT's PSN 4 with a PSN sequence NAK at once (the request not taken); the DUT goes back to PSN 4.
dut:
  role: requester
  tool: ib_write_bw
traffic:
  message-size: 16384
  mtu: 1024
events:
  - type: seq-nak
    psn: 4
`,
  },
  {
    name: 'ack-delay-timeout',
    summary: 'DUT requester: we hold its ACK past its timeout; its timer fires, the resend vs 4.096 µs × 2^timeout',
    yaml: `name: ack-delay-timeout
description: Our ACK of the DUT's message leaves 5 ms late; its local ACK timer (timeout 10, 4.194 ms) runs out first and it resends from PSN 0.
dut:
  role: requester
  tool: ib_write_bw
traffic:
  message-size: 16384
  mtu: 1024
  min-retransmit-timeout: 10   # 4.194 ms
events:
  - type: delay-ack
    psn: 15
    delay-us: 5000
`,
  },
  {
    name: 'ack-delay-in-time',
    summary: 'DUT requester: we hold its ACK, within its timeout; its timer must not fire',
    yaml: `name: ack-delay-in-time
description: Our ACK of the DUT's message leaves 3 ms late, inside its local ACK timeout 10 (4.194 ms), so no resend.
dut:
  role: requester
  tool: ib_write_bw
traffic:
  message-size: 16384
  mtu: 1024
  min-retransmit-timeout: 10   # 4.194 ms
events:
  - type: delay-ack
    psn: 15
    delay-us: 3000
`,
  },
  {
    name: 'cnp-generation',
    summary: 'DUT responder with ECN on: we set CE on one request; its CNP latency',
    yaml: `name: cnp-generation
description: Our request at PSN 4 carries ECN CE; the DUT, a notification point, answers with a CNP to our QP.
dut:
  role: responder
  tool: ib_write_bw
traffic:
  message-size: 16384
  mtu: 1024
events:
  - type: ecn
    psn: 4
`,
  },
  {
    name: 'cnp-spacing',
    summary: 'DUT responder with ECN on: a run of CE marks; its CNPs no closer than np_min_time_between_cnps',
    yaml: `name: cnp-spacing
description: Every request of the message carries CE, paced at 1 Gb/s (8.6 us apart); the DUT sends at most one CNP per 50 us.
dut:
  role: responder
  tool: ib_write_bw
traffic:
  message-size: 16384
  mtu: 1024
  min-time-between-cnps: 50   # the DUT's np_min_time_between_cnps, us (DCQCN's N)
  rate-mbps: 1000             # our requests paced at 1 Gb/s
events:
  - type: ecn
    psn: 0
  - type: ecn
    psn: 1
  - type: ecn
    psn: 2
  - type: ecn
    psn: 3
  - type: ecn
    psn: 4
  - type: ecn
    psn: 5
  - type: ecn
    psn: 6
  - type: ecn
    psn: 7
  - type: ecn
    psn: 8
  - type: ecn
    psn: 9
  - type: ecn
    psn: 10
  - type: ecn
    psn: 11
  - type: ecn
    psn: 12
  - type: ecn
    psn: 13
  - type: ecn
    psn: 14
  - type: ecn
    psn: 15
`,
  },
  {
    name: 'duplicate-write',
    summary: 'DUT responder of WRITEs: we send a request twice; it acknowledges the copy again',
    yaml: `name: duplicate-write
description: Our WRITE request at PSN 4 leaves twice; the DUT takes the first and answers the copy with an ACK, not a NAK.
dut:
  role: responder
  tool: ib_write_bw
traffic:
  message-size: 16384
  mtu: 1024
events:
  - type: duplicate
    psn: 4
`,
  },
  {
    name: 'duplicate-read',
    summary: 'DUT responder of READs: we send a READ request twice; it executes it again',
    yaml: `name: duplicate-read
description: Our READ request (PSN 0, 16 response packets) leaves twice; the DUT sends the 16 responses again.
dut:
  role: responder
  tool: ib_read_bw
traffic:
  message-size: 16384
  mtu: 1024
events:
  - type: duplicate
    psn: 0
`,
  },
  {
    name: 'duplicate-atomic',
    summary: 'DUT responder of atomics: we send a fetch-and-add twice; it answers the copy from its saved result, executed once',
    yaml: `name: duplicate-atomic
description: Our fetch-and-add at PSN 2 (of 5, all on one word) leaves twice; the DUT answers the copy with the original value it returned first and does not add again, so PSN 3 finds the word one add further.
dut:
  role: responder
  tool: ib_atomic_bw
traffic:
  num-msgs-per-qp: 5
  message-size: 8       # an atomic's one 64-bit word (the only size ib_atomic_bw takes)
events:
  - type: duplicate
    psn: 2
`,
  },
  {
    name: 'cnp-rate',
    summary: 'DUT requester with DCQCN: one CNP; its rate cut, its recovery, and its timer and byte counter',
    yaml: `name: cnp-rate
description: The DUT sends at 10 Gb/s; one CNP when its PSN 256 arrives; its rate falls and comes back, step by step.
dut:
  role: requester
  tool: ib_write_bw
traffic:
  num-msgs-per-qp: 4
  message-size: 1048576
  mtu: 1024
  rate-mbps: 10000           # the DUT's line rate on the in-memory link
dcqcn:                       # what the DUT is configured with (mlx5 cc_params names): the reading is judged against it
  rp_time_reset: 300
  rp_byte_reset: 32767
  rp_initial_alpha_value: 1023
events:
  - type: cnp
    psn: 256
    count: 1
`,
  },
];

/** The bundled scenario named `name`, or undefined. */
export function bundledScenario(name: string): BundledScenario | undefined {
  return BUNDLED_SCENARIOS.find((s) => s.name === name);
}
