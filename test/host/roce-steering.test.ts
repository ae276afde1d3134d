/**
 * `--steer`'s ethtool steps (apps/host/roce-steering.ts), against ethtool's recorded output
 * (test/host/ethtool-outputs.ts says where each text came from). A scripted runner answers each
 * expected ethtool command with its recorded output, in order, and fails on any other, so each test
 * pins the whole sequence: what is read, what is changed, and that every change is undone (on
 * failure at once, on success by remove()). Over a real veth: test/e2e/steer.test.ts.
 */
import {
  type CommandRunner,
  XdpSteerError,
  installRoceSteering,
  parseAddedRule,
  parseNtupleFeature,
  parseRxRules,
  roceRules,
  steeringStatus,
  systemRunner,
} from '../../apps/host/roce-steering';
import * as E from './ethtool-outputs';

/** Answers the expected ethtool commands in order; records them; an unexpected one fails the test. */
class ScriptedEthtool {
  readonly calls: string[] = [];
  private readonly steps: E.EthtoolStep[];
  constructor(steps: E.EthtoolStep[]) {
    this.steps = [...steps];
  }
  readonly run: CommandRunner = (args) => {
    const cmd = args.join(' ');
    this.calls.push(cmd);
    const next = this.steps.shift();
    if (next === undefined || next[0] !== cmd) throw new Error(`unexpected ethtool ${cmd} (expected ${next?.[0] ?? 'nothing'})`);
    return next[1];
  };
  get left(): string[] {
    return this.steps.map((s) => s[0]);
  }
}

const IF = 'eth5';
const udp4 = (q: number): string => `-N ${IF} flow-type udp4 dst-port 4791 action ${q}`;
const udp6 = (q: number): string => `-N ${IF} flow-type udp6 dst-port 4791 action ${q}`;

function steerError(fn: () => unknown): XdpSteerError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(XdpSteerError);
    expect((e as XdpSteerError).code).toBe('ROCE_ERR_XDP_STEER');
    return e as XdpSteerError;
  }
  throw new Error('no error');
}

describe('parsing ethtool', () => {
  test('-k: the ntuple-filters line, fixed or changeable, among the other features', () => {
    expect(parseNtupleFeature(E.VETH_FEATURES.stdout)).toEqual({ on: false, fixed: true });
    expect(parseNtupleFeature(E.CHANGEABLE_FEATURES.stdout)).toEqual({ on: false, fixed: false });
    expect(parseNtupleFeature(E.NTUPLE_ON_FEATURES.stdout)).toEqual({ on: true, fixed: false });
    expect(parseNtupleFeature('Features for x:\nrx-checksumming: on\n')).toBeNull();
  });

  test('-n: the virtio_net listing: five rules, their types, ports, queues and the drop', () => {
    const l = parseRxRules(E.VIRTIO_LIST.stdout);
    expect(l.rings).toBe(4);
    expect(l.rules.map((r) => [r.id, r.type, r.dstPort, r.queue])).toEqual([
      [0, 'Raw Ethernet', null, 0],
      [1, 'UDP over IPv4', 5001, 3],
      [2, 'TCP over IPv6', 5001, 2],
      [3, 'Raw IPv4', null, 1],
      [5, 'Raw IPv6', null, null],
    ]);
    expect(l.rules[1]).toMatchObject({ dstPortExact: true, onlyDstPort: true });
    // The TCP/IPv6 rule also matches a source address.
    expect(l.rules[2]).toMatchObject({ dstPortExact: true, onlyDstPort: false });
    expect(roceRules(l.rules)).toEqual([]);
  });

  test("-n: ixgbe's rule with VLAN and user-defined fields matches a destination address too; none after XDP; tg3 and veth have no rules", () => {
    const l = parseRxRules(E.IXGBE_LIST.stdout);
    expect(l).toMatchObject({
      rings: 16,
      rules: [{ id: 4093, type: 'UDP over IPv4', dstPort: 5500, dstPortExact: true, onlyDstPort: false, queue: 0, vf: null }],
    });
    expect(parseRxRules(E.IXGBE_LIST_AFTER_XDP.stdout)).toEqual({ rings: 16, rules: [] });
    expect(parseRxRules(E.TG3_LIST.stdout)).toEqual({ rings: 4, rules: [] });
    expect(parseRxRules(E.VETH_LIST.stdout)).toEqual({ rings: null, rules: [] });
  });

  test('-n: the RoCE rules: UDP over IPv4 and IPv6 to port 4791 exactly', () => {
    expect(roceRules(parseRxRules(E.steeredList(2).stdout).rules)).toEqual([
      { id: 1023, flowType: 'udp4', queue: 2, allRoce: true },
      { id: 1022, flowType: 'udp6', queue: 2, allRoce: true },
    ]);
  });

  test('-N: the rule ID ethtool prints; none when it printed no line', () => {
    expect(parseAddedRule(E.ADDED_1023.stdout)).toBe(1023);
    expect(parseAddedRule(E.IXGBE_INSERTED.stdout)).toBe(4093);
    expect(parseAddedRule('')).toBeNull();
  });
});

describe('installRoceSteering', () => {
  test('a NIC with ntuple off: turned on, both rules added, checked after the open; remove() deletes them newest first and turns ntuple off', () => {
    const t = E.takingNic(IF);
    const e = new ScriptedEthtool([...t.install, ...t.verify, ...t.remove]);
    const s = installRoceSteering(IF, 0, e.run);
    expect(s.info).toMatchObject({
      queue: 0,
      added: [
        { id: 1023, flowType: 'udp4' },
        { id: 1022, flowType: 'udp6' },
      ],
      reused: [],
      ntupleTurnedOn: true,
      warnings: [],
    });
    s.verify();
    expect(s.remove()).toEqual([]);
    expect(e.left).toEqual([]);
    // Once only.
    expect(s.remove()).toEqual([]);
    expect(e.calls).toHaveLength(9);
  });

  test('ntuple already on: left alone; --queues 3 steers to queue 3', () => {
    const e = new ScriptedEthtool([
      [`-k ${IF}`, E.NTUPLE_ON_FEATURES],
      [`-n ${IF}`, E.EMPTY_LIST],
      [udp4(3), E.ADDED_1023],
      [udp6(3), E.ADDED_1022],
      [`-N ${IF} delete 1022`, E.DELETED],
      [`-N ${IF} delete 1023`, E.DELETED],
    ]);
    const s = installRoceSteering(IF, 3, e.run);
    expect(s.info.ntupleTurnedOn).toBe(false);
    expect(s.remove()).toEqual([]);
    expect(e.left).toEqual([]);
  });

  test("veth (recorded): ntuple off [fixed], the insert fails: ethtool's words, the remedies, nothing changed", () => {
    const e = new ScriptedEthtool([
      [`-k ${IF}`, E.VETH_FEATURES],
      [`-n ${IF}`, E.VETH_LIST],
      [udp4(0), E.VETH_INSERT],
    ]);
    const err = steerError(() => installRoceSteering(IF, 0, e.run));
    expect(err.message).toBe(
      `--steer on ${IF}: ethtool -N ${IF} flow-type udp4 dst-port 4791 action 0 failed: rxclass: Cannot get RX class rule count: Operation not supported; Cannot insert classification rule (the driver has no ntuple flow steering) (ntuple-filters: off [fixed]); use one queue (ethtool -L ${IF} combined 1), or --driver packet, which sees every queue`,
    );
    expect(e.calls).toEqual([`-k ${IF}`, `-n ${IF}`, udp4(0)]);
  });

  test('not root (recorded as uid 65534): turning ntuple on is refused; the message says root is needed; nothing else is tried', () => {
    const e = new ScriptedEthtool([
      [`-k ${IF}`, E.CHANGEABLE_FEATURES],
      [`-K ${IF} ntuple on`, E.NOT_ROOT_FEATURE_CHANGE],
    ]);
    const err = steerError(() => installRoceSteering(IF, 0, e.run));
    expect(err.message).toMatch(
      /ethtool -K eth5 ntuple on: netlink error: Operation not permitted \(changing the NIC needs root: CAP_NET_ADMIN\); use one queue \(ethtool -L eth5 combined 1\), or --driver packet/,
    );
    expect(e.left).toEqual([]);
  });

  test('ethtool missing (the runner could not start it): says so, with the install command and the remedies', () => {
    const e = new ScriptedEthtool([[`-k ${IF}`, { status: null, stdout: '', stderr: '', error: 'ENOENT' }]]);
    const err = steerError(() => installRoceSteering(IF, 0, e.run));
    expect(err.message).toBe(
      `--steer on ${IF}: ethtool is not installed (apt-get install ethtool); without it use one queue (ethtool -L ${IF} combined 1), or --driver packet, which sees every queue`,
    );
  });

  test('ethtool missing, for real: systemRunner with a binary that is not there gives ENOENT', () => {
    const r = systemRunner({ binary: 'ethtool-not-installed-here' })(['-k', 'lo']);
    expect(r.error).toBe('ENOENT');
    expect(() => installRoceSteering('lo', 0, systemRunner({ binary: 'ethtool-not-installed-here' }))).toThrow(/ethtool is not installed/);
  });

  test('IPv4 added, then a rule of the administrator sends IPv6 RoCE to queue 2: the IPv4 rule is deleted and ntuple turned off again before the error', () => {
    const e = new ScriptedEthtool([
      [`-k ${IF}`, E.CHANGEABLE_FEATURES],
      [`-K ${IF} ntuple on`, E.FEATURE_CHANGED],
      [`-n ${IF}`, E.adminRoceList('udp6', 7, 2)],
      [udp4(0), E.ADDED_1023],
      [`-N ${IF} delete 1023`, E.DELETED],
      [`-K ${IF} ntuple off`, E.FEATURE_CHANGED],
    ]);
    const err = steerError(() => installRoceSteering(IF, 0, e.run));
    expect(err.message).toMatch(/rule 7 already steers udp6 port 4791 to queue 2: delete it \(ethtool -N eth5 delete 7\) or run with --queues 2/);
    expect(e.left).toEqual([]);
  });

  test("an administrator's rule already sends IPv4 RoCE to our queue: reused, never deleted; only the IPv6 rule is ours", () => {
    const e = new ScriptedEthtool([
      [`-k ${IF}`, E.NTUPLE_ON_FEATURES],
      [`-n ${IF}`, E.adminRoceList('udp4', 7, 0)],
      [udp6(0), E.ADDED_1022],
      [`-N ${IF} delete 1022`, E.DELETED],
    ]);
    const s = installRoceSteering(IF, 0, e.run);
    expect(s.info).toMatchObject({ added: [{ id: 1022, flowType: 'udp6' }], reused: [{ id: 7, flowType: 'udp4' }] });
    expect(s.remove()).toEqual([]);
    expect(e.left).toEqual([]);
  });

  test("a classifier that takes IPv4 only: the IPv6 insert's EINVAL is a warning, the IPv4 rule stays", () => {
    const e = new ScriptedEthtool([
      [`-k ${IF}`, E.NTUPLE_ON_FEATURES],
      [`-n ${IF}`, E.EMPTY_LIST],
      [udp4(0), E.IXGBE_INSERTED],
      [udp6(0), E.INSERT_EINVAL],
      [`-N ${IF} delete 4093`, E.DELETED],
    ]);
    const s = installRoceSteering(IF, 0, e.run);
    expect(s.info.added).toEqual([{ id: 4093, flowType: 'udp4' }]);
    expect(s.info.warnings).toEqual([
      `ethtool -N ${IF} flow-type udp6 dst-port 4791 action 0 failed: rmgr: Cannot insert RX class rule: Invalid argument; Cannot insert classification rule; IPv6 RoCE is not steered and reaches queue 0 only if RSS puts it there`,
    ]);
    expect(s.remove()).toEqual([]);
    expect(e.left).toEqual([]);
  });

  test('ixgbe drops its rules when XDP attaches (recorded listing): verify() fails naming them, and only ntuple is left to undo', () => {
    const t = E.takingNic(IF);
    const e = new ScriptedEthtool([...t.install.slice(0, 3), [udp4(0), E.IXGBE_INSERTED], t.install[4]!, [`-n ${IF}`, E.IXGBE_LIST_AFTER_XDP], t.remove[2]!]);
    const s = installRoceSteering(IF, 0, e.run);
    const err = steerError(() => s.verify());
    expect(err.message).toMatch(/rules 4093 \(udp4\), 1022 \(udp6\) vanished once the device opened \(the driver reset its classifier when XDP attached\)/);
    expect(e.left).toEqual([]);
    expect(s.remove()).toEqual([]);
  });

  test("a delete that fails at the end is reported, with ethtool's words; the rest is still undone", () => {
    const t = E.takingNic(IF);
    const e = new ScriptedEthtool([...t.install, [`-N ${IF} delete 1022`, E.VETH_DELETE], ...t.remove.slice(1)]);
    const s = installRoceSteering(IF, 0, e.run);
    expect(s.remove()).toEqual([
      `ethtool -N ${IF} delete 1022: rmgr: Cannot delete RX class rule: Operation not supported; Cannot delete classification rule (the driver has no ntuple flow steering)`,
    ]);
    expect(e.left).toEqual([]);
  });

  test('an insert that exits 0 without a rule ID (the location was given by someone else) is a failure, undone', () => {
    const e = new ScriptedEthtool([
      [`-k ${IF}`, E.NTUPLE_ON_FEATURES],
      [`-n ${IF}`, E.EMPTY_LIST],
      [udp4(0), E.DELETED],
    ]);
    expect(steerError(() => installRoceSteering(IF, 0, e.run)).message).toMatch(/ethtool printed no rule ID \(exit status 0\)/);
  });
});

describe('steeringStatus (roce devices)', () => {
  test("veth: ntuple off [fixed], no rules readable, ethtool's words", () => {
    const e = new ScriptedEthtool([
      [`-k ${IF}`, E.VETH_FEATURES],
      [`-n ${IF}`, E.VETH_LIST],
    ]);
    const st = steeringStatus(IF, e.run);
    expect(st).toMatchObject({ ethtool: true, ntuple: 'fixed off', roceRules: null });
    expect(st.problem).toMatch(
      /^Cannot get RX rings: Operation not supported; .*RX classification rule retrieval failed \(the driver has no ntuple flow steering\)$/,
    );
  });

  test("a NIC with --steer's rules in place: ntuple on, both listed", () => {
    const e = new ScriptedEthtool([
      [`-k ${IF}`, E.NTUPLE_ON_FEATURES],
      [`-n ${IF}`, E.steeredList(0)],
    ]);
    expect(steeringStatus(IF, e.run)).toEqual({
      ethtool: true,
      ntuple: 'on',
      roceRules: [
        { id: 1023, flowType: 'udp4', queue: 0, allRoce: true },
        { id: 1022, flowType: 'udp6', queue: 0, allRoce: true },
      ],
      problem: '',
    });
  });

  test('no ethtool', () => {
    const st = steeringStatus('lo', systemRunner({ binary: 'ethtool-not-installed-here' }));
    expect(st).toEqual({ ethtool: false, ntuple: 'unknown', roceRules: null, problem: 'ethtool is not installed' });
  });
});
