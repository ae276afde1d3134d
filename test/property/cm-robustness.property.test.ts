/**
 * fast-check over the CM in the stack: whatever CM MADs a peer sends, in whatever order and with
 * whatever field values (random bytes, with the communication IDs now and then set to live ones so
 * that the state handlers, not only the lookups, see them), and however time moves, the GSI and
 * the state machine never throw, and every frame the stack sends decodes cleanly (the scripted
 * peer checks that). Connections the API is asked for are made or refused with an event.
 */
import fc from 'fast-check';
import { scriptedPeer, op } from '../support/scripted-peer';
import { RdmaCm, type RdmaCmEvent } from '../../stack/cm/rdma-cm';
import { CM_CLASS_VERSION, GSI_QKEY, MAD_HEADER_LEN, MAD_LEN, MgmtClass, emitMadHeader } from '../../packets/mad';
import { rdmaServiceId, PortSpace } from '../../packets/cm/service-id';
import { VerbsError } from '../../stack/errors';

const PORT = 7174;

const arbMad = fc.record({
  attributeId: fc.integer({ min: 0x0010, max: 0x001a }),
  data: fc.uint8Array({ minLength: MAD_LEN - MAD_HEADER_LEN, maxLength: MAD_LEN - MAD_HEADER_LEN }),
  /** 0: keep the random IDs; 1: our ID as remote comm ID; 2: also the REQ's service ID is ours. */
  aim: fc.integer({ min: 0, max: 2 }),
  pick: fc.nat(),
  advanceNs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 20_000_000_000 })),
  classVersion: fc.oneof(fc.constant(CM_CLASS_VERSION), fc.integer({ min: 0, max: 255 })),
});

test('random CM MADs against a listening and a connecting CM: nothing throws, every frame sent decodes', () => {
  fc.assert(
    fc.property(fc.array(arbMad, { minLength: 1, maxLength: 25 }), (mads) => {
      const h = scriptedPeer();
      const rcm = new RdmaCm(h.dev, { seed: 9 });
      const events: RdmaCmEvent[] = [];
      rcm.listen(PORT, (e) => {
        events.push(e);
        if (e.type === 'CONNECT_REQUEST') {
          try {
            e.id.accept(h.qp);
          } catch (err) {
            if (!(err instanceof VerbsError)) throw err;
          }
        }
      });
      const pd = h.dev.allocPd();
      const cq = h.dev.createCq(64);
      const qp2 = h.dev.createQp(pd, { qpType: 2, sendCq: cq, recvCq: cq });
      rcm.connect({ dst: '198.18.0.2', port: PORT, qp: qp2 }, (e) => events.push(e));
      let psn = 0;
      for (const m of mads) {
        const mad = new Uint8Array(MAD_LEN);
        const v = new DataView(mad.buffer);
        emitMadHeader(
          {
            baseVersion: 1,
            mgmtClass: MgmtClass.CM,
            classVersion: m.classVersion,
            method: 3,
            status: 0,
            classSpecific: 0,
            transactionId: BigInt(m.pick),
            attributeId: m.attributeId,
            reserved: 0,
            attributeModifier: 0,
          },
          v,
          0,
        );
        mad.set(m.data, MAD_HEADER_LEN);
        const ids = [...rcm.cm.ids.keys()];
        if (m.aim > 0 && ids.length > 0) v.setUint32(MAD_HEADER_LEN + 4, ids[m.pick % ids.length] as number);
        if (m.aim === 2 && m.attributeId === 0x0010) v.setBigUint64(MAD_HEADER_LEN + 8, rdmaServiceId(PortSpace.TCP, PORT));
        h.inject({ bth: { opcode: op('UD_SEND_ONLY'), psn: psn++, destQp: 1 }, deth: { qkey: GSI_QKEY, srcQp: 1 }, payload: mad });
        h.advance(m.advanceNs);
        h.sent();
      }
      h.advance(200_000_000_000);
      h.sent();
    }),
    { numRuns: 150, seed: 12 },
  );
});
