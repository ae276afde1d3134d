#!/bin/sh
# Regenerates the generated captures in captures/ (test/support/make-captures.ts: the frame-builder
# files, cm-exchanges.pcap, and nvme-rdma.pcap from test/support/make-nvme-capture.ts, two roce-ts
# stacks on the in-memory link) and checks that they are what a second run writes.
set -eu
cd "$(dirname "$0")/.."
UPDATE_CAPTURES=1 npx jest test/captures/captures-current
