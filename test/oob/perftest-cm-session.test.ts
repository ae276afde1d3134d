/** perftest -R: the session's steps (create_rdma_cm_connection in place of ctx_connect) and struct pingpong_dest as rdma_write_keys sends it. */
import { PerftestVerb, keyMessageCount, sessionSteps } from '../../apps/oob/perftest-session';
import { PINGPONG_DEST_STRUCT_SIZE, decodeDestStruct, encodeDestStruct } from '../../apps/oob/perftest-dest-struct';

test('struct pingpong_dest: 56 bytes, every field big-endian, vaddr at 24 after the padding, gid raw at 32', () => {
  const gid = Uint8Array.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 2]);
  const b = encodeDestStruct({ lid: 0, outReads: 128, qpn: 0x11, psn: 0xabcdef, rkey: 0x1234, vaddr: 0x55d0c0de0000n, tailMarkersVaddr: 0n, gid, srqn: 0 }, 3);
  expect(b.length).toBe(PINGPONG_DEST_STRUCT_SIZE);
  expect(Buffer.from(b).toString('hex')).toBe(
    '00000000' +
      '00000080' +
      '00000011' +
      '00abcdef' +
      '00001234' +
      '00000000' +
      '000055d0c0de0000' +
      '00000000000000000000ffffc6120002' +
      '00000000' +
      '00000003',
  );
  const d = decodeDestStruct(b);
  expect(d).toMatchObject({ lid: 0, outReads: 128, qpn: 0x11, psn: 0xabcdef, rkey: 0x1234, vaddr: 0x55d0c0de0000n, srqn: 0 });
  expect(Array.from(d.gid ?? [])).toEqual(Array.from(gid));
  expect(() => decodeDestStruct(b.subarray(0, 55))).toThrow(/must be 56 bytes/);
});

test.each([
  [PerftestVerb.WRITE, false],
  [PerftestVerb.READ, false],
  [PerftestVerb.SEND, false],
  [PerftestVerb.ATOMIC, false],
  [PerftestVerb.WRITE, true],
  [PerftestVerb.READ, true],
  [PerftestVerb.SEND, true],
] as const)('%s lat=%p: -R puts create_rdma_cm_connection right after check_mtu and drops ctx_connect; two more key exchanges', (verb, lat) => {
  for (const role of ['client', 'server'] as const) {
    const tcp = sessionSteps(verb, lat, role);
    const cm = sessionSteps(verb, lat, role, true);
    expect(cm.map((s) => s.kind).slice(0, 4)).toEqual(['versions', 'sys-data', 'mtu', 'cm-connect']);
    expect(cm.some((s) => s.kind === 'connect')).toBe(false);
    expect(cm.filter((s) => s.kind !== 'cm-connect')).toEqual(tcp.filter((s) => s.kind !== 'connect'));
    expect(keyMessageCount(cm)).toBe(keyMessageCount(tcp) + 2);
  }
});
