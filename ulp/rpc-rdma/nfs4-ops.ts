/**
 * The arguments and results of each NFSv4 COMPOUND operation (RFC 8881 §18 for 4.0 and 4.1,
 * RFC 7862 §15 for 4.2, RFC 8276 §8.4 for the extended attributes), read as far as a COMPOUND needs
 * to find the next one, with each operation's key arguments in words (a LOOKUP's name, a READ's
 * offset and count). An operation whose layout is not read here (BACKCHANNEL_CTL, GETDEVICEINFO's
 * result, LAYOUTSTATS, WRITE_SAME, a state protection other than SP4_NONE, RPCSEC_GSS callback
 * parameters) stops the reading: the operations after it are counted, not named.
 *
 * A result whose status is not NFS4_OK is void but for SETATTR (its attrsset bitmap is always
 * there), LOCK and LOCKT denied (LOCK4denied), SETCLIENTID refused with NFS4ERR_CLID_INUSE (the
 * client address in use) and COPY with NFS4ERR_OFFLOAD_NO_REQS (copy_requirements4).
 */
import type { XdrReader } from './xdr-reader';
import { NFS4ERR_CLID_INUSE, NFS4ERR_DENIED, NFS4ERR_OFFLOAD_NO_REQS } from './nfs-status';

const MAX_ITEMS = 4096;
const MAX_BITMAP = 64;

const STATEID = 16;
const SESSIONID = 16;
const VERIFIER = 8;
const CHANGE_INFO = 20;
const NFSTIME = 12;

function bitmap(r: XdrReader): void {
  const n = r.count('a bitmap4', MAX_BITMAP);
  r.skip(n * 4, 'a bitmap4');
}
function fattr(r: XdrReader): void {
  bitmap(r);
  r.opaque("an fattr4's attrlist");
}
/** A component4 or utf8str, quoted for the words (at most 64 characters shown). */
function name(r: XdrReader, what: string): string {
  const s = r.text(what);
  return JSON.stringify(s.length > 64 ? `${s.slice(0, 64)}…` : s);
}
function lockOwner(r: XdrReader): void {
  r.skip(8, "a lock_owner4's clientid");
  r.opaque("a lock_owner4's owner");
}
function netaddr(r: XdrReader): void {
  r.opaque("a netaddr4's netid");
  r.opaque("a netaddr4's addr");
}
function netloc(r: XdrReader): void {
  const type = r.u32('a netloc4');
  if (type === 3) netaddr(r);
  else r.opaque('a netloc4');
}
function channelAttrs(r: XdrReader): void {
  r.skip(24, 'a channel_attrs4');
  const n = r.count("a channel_attrs4's rdma_ird", 1);
  r.skip(n * 4, "a channel_attrs4's rdma_ird");
}
/** callback_sec_parms4<>: AUTH_NONE and AUTH_SYS read, false at RPCSEC_GSS (its handles are not read here). */
function callbackSec(r: XdrReader): boolean {
  const n = r.count('callback_sec_parms4', MAX_ITEMS);
  for (let i = 0; i < n; i++) {
    const flavor = r.u32('callback_sec_parms4');
    if (flavor === 1) {
      r.skip(4, 'authsys_parms');
      r.opaque('authsys_parms machinename');
      r.skip(8, 'authsys_parms');
      r.skip(r.count('authsys_parms gids', 16) * 4, 'authsys_parms gids');
    } else if (flavor !== 0) return false;
  }
  return true;
}
const range = (off: bigint, len: bigint | number) => `off ${off} len ${len}`;

type ArgReader = (r: XdrReader, ddp: boolean) => string | null;
const none: ArgReader = () => '';
const fixed =
  (n: number): ArgReader =>
  (r) => {
    r.skip(n, 'NFSv4 arguments');
    return '';
  };

/** Each operation's arguments; the words of its key arguments ('' when none are shown), or null when the layout is not read here. */
const ARGS: Readonly<Record<number, ArgReader>> = {
  3: (r) => `access 0x${r.u32('ACCESS4args').toString(16)}`,
  4: fixed(4 + STATEID),
  5: (r) => range(r.u64('COMMIT4args'), r.u32('COMMIT4args')),
  6: (r) => {
    const type = r.u32('CREATE4args objtype');
    if (type === 5) r.opaque('CREATE4args linkdata');
    else if (type === 3 || type === 4) r.skip(8, 'CREATE4args devdata');
    const n = name(r, 'CREATE4args objname');
    fattr(r);
    return n;
  },
  7: fixed(8),
  8: fixed(STATEID),
  9: (r) => {
    bitmap(r);
    return '';
  },
  10: none,
  11: (r) => name(r, 'LINK4args newname'),
  12: (r) => {
    r.skip(8, 'LOCK4args');
    const off = r.u64('LOCK4args offset');
    const len = r.u64('LOCK4args length');
    if (r.u32('LOCK4args new_lock_owner') !== 0) {
      r.skip(4 + STATEID + 4, 'open_to_lock_owner4');
      lockOwner(r);
    } else r.skip(STATEID + 4, 'exist_lock_owner4');
    return range(off, len);
  },
  13: (r) => {
    r.skip(4, 'LOCKT4args');
    const off = r.u64('LOCKT4args offset');
    const len = r.u64('LOCKT4args length');
    lockOwner(r);
    return range(off, len);
  },
  14: (r) => {
    r.skip(8 + STATEID, 'LOCKU4args');
    return range(r.u64('LOCKU4args offset'), r.u64('LOCKU4args length'));
  },
  15: (r) => name(r, 'LOOKUP4args objname'),
  16: none,
  17: (r) => {
    fattr(r);
    return '';
  },
  18: (r) => {
    r.skip(12, 'OPEN4args');
    r.skip(8, 'OPEN4args owner clientid');
    r.opaque('OPEN4args owner');
    if (r.u32('OPEN4args opentype') === 1) {
      const how = r.u32('createhow4');
      if (how === 0 || how === 1) fattr(r);
      else if (how === 2) r.skip(VERIFIER, 'createhow4 verifier');
      else if (how === 3) {
        r.skip(VERIFIER, 'creatverfattr');
        fattr(r);
      } else return null;
    }
    const claim = r.u32('open_claim4');
    if (claim === 0 || claim === 3) return name(r, 'open_claim4 file');
    if (claim === 1) r.skip(4, 'open_claim4 delegate_type');
    else if (claim === 2) {
      r.skip(STATEID, 'open_claim4 delegate_stateid');
      return name(r, 'open_claim4 file');
    } else if (claim === 5) r.skip(STATEID, 'open_claim4 stateid');
    else if (claim !== 4 && claim !== 6) return null;
    return '';
  },
  19: fixed(4),
  20: fixed(STATEID + 4),
  21: fixed(STATEID + 12),
  22: (r) => {
    r.opaque('PUTFH4args');
    return '';
  },
  23: none,
  24: none,
  25: (r) => {
    r.skip(STATEID, 'READ4args');
    return range(r.u64('READ4args offset'), r.u32('READ4args count'));
  },
  26: (r) => {
    r.skip(16, 'READDIR4args');
    r.skip(8, 'READDIR4args');
    bitmap(r);
    return '';
  },
  27: none,
  28: (r) => name(r, 'REMOVE4args target'),
  29: (r) => `${name(r, 'RENAME4args oldname')} to ${name(r, 'RENAME4args newname')}`,
  30: fixed(8),
  31: none,
  32: none,
  33: (r) => name(r, 'SECINFO4args name'),
  34: (r) => {
    r.skip(STATEID, 'SETATTR4args');
    fattr(r);
    return '';
  },
  35: (r) => {
    r.skip(VERIFIER, 'SETCLIENTID4args');
    r.opaque('SETCLIENTID4args id');
    r.skip(4, 'cb_client4');
    netaddr(r);
    r.skip(4, 'SETCLIENTID4args');
    return '';
  },
  36: fixed(8 + VERIFIER),
  37: (r) => {
    fattr(r);
    return '';
  },
  38: (r, ddp) => {
    r.skip(STATEID, 'WRITE4args');
    const off = r.u64('WRITE4args offset');
    r.skip(4, 'WRITE4args stable');
    const at = r.o;
    r.opaque("WRITE4args' data", ddp);
    return range(off, r.view.getUint32(at));
  },
  39: (r) => {
    lockOwner(r);
    return '';
  },
  41: fixed(SESSIONID + 8),
  42: (r) => {
    r.skip(VERIFIER, 'client_owner4');
    const owner = name(r, 'client_owner4 ownerid');
    r.skip(4, 'EXCHANGE_ID4args flags');
    if (r.u32('state_protect4_a') !== 0) return null;
    const n = r.count('client_impl_id', 1);
    for (let i = 0; i < n; i++) {
      r.opaque('nfs_impl_id4 domain');
      r.opaque('nfs_impl_id4 name');
      r.skip(NFSTIME, 'nfs_impl_id4 date');
    }
    return owner;
  },
  40: (r) => {
    r.skip(4, 'BACKCHANNEL_CTL4args cb_program');
    return callbackSec(r) ? '' : null;
  },
  43: (r) => {
    r.skip(16, 'CREATE_SESSION4args');
    channelAttrs(r);
    channelAttrs(r);
    r.skip(4, 'CREATE_SESSION4args cb_program');
    return callbackSec(r) ? '' : null;
  },
  44: fixed(SESSIONID),
  45: fixed(STATEID),
  46: (r) => {
    r.skip(4, 'GET_DIR_DELEGATION4args');
    bitmap(r);
    r.skip(2 * NFSTIME, 'GET_DIR_DELEGATION4args');
    bitmap(r);
    bitmap(r);
    return '';
  },
  47: (r) => {
    r.skip(16 + 8, 'GETDEVICEINFO4args');
    bitmap(r);
    return '';
  },
  48: fixed(8 + 8 + VERIFIER),
  49: (r) => {
    const off = r.u64('LAYOUTCOMMIT4args offset');
    const len = r.u64('LAYOUTCOMMIT4args length');
    r.skip(4 + STATEID, 'LAYOUTCOMMIT4args');
    if (r.u32('newoffset4') !== 0) r.skip(8, 'newoffset4');
    if (r.u32('newtime4') !== 0) r.skip(NFSTIME, 'newtime4');
    r.skip(4, 'layoutupdate4');
    r.opaque('layoutupdate4 body');
    return range(off, len);
  },
  50: (r) => {
    r.skip(12, 'LAYOUTGET4args');
    const off = r.u64('LAYOUTGET4args offset');
    const len = r.u64('LAYOUTGET4args length');
    r.skip(8 + STATEID + 4, 'LAYOUTGET4args');
    return range(off, len);
  },
  51: (r) => {
    r.skip(12, 'LAYOUTRETURN4args');
    if (r.u32('layoutreturn4') === 1) {
      r.skip(16 + STATEID, 'layoutreturn_file4');
      r.opaque('layoutreturn_file4 body');
    }
    return '';
  },
  52: fixed(4),
  53: fixed(SESSIONID + 16),
  54: (r) => {
    r.opaque('SET_SSV4args ssv');
    r.opaque('SET_SSV4args digest');
    return '';
  },
  55: (r) => {
    const n = r.count('TEST_STATEID4args', MAX_ITEMS);
    r.skip(n * STATEID, 'TEST_STATEID4args');
    return '';
  },
  56: (r) => {
    r.skip(4, 'WANT_DELEGATION4args');
    const claim = r.u32('deleg_claim4');
    if (claim === 1) r.skip(4, 'deleg_claim4');
    else if (claim !== 4 && claim !== 6) return null;
    return '';
  },
  57: fixed(8),
  58: fixed(4),
  59: (r) => {
    r.skip(STATEID, 'ALLOCATE4args');
    return range(r.u64('ALLOCATE4args offset'), r.u64('ALLOCATE4args length'));
  },
  60: (r) => {
    r.skip(2 * STATEID, 'COPY4args');
    const src = r.u64('COPY4args src_offset');
    const dst = r.u64('COPY4args dst_offset');
    const count = r.u64('COPY4args count');
    r.skip(8, 'COPY4args');
    const n = r.count('COPY4args src_servers', MAX_ITEMS);
    for (let i = 0; i < n; i++) netloc(r);
    return `src ${src} dst ${dst} len ${count}`;
  },
  61: (r) => {
    r.skip(STATEID, 'COPY_NOTIFY4args');
    netloc(r);
    return '';
  },
  62: (r) => {
    r.skip(STATEID, 'DEALLOCATE4args');
    return range(r.u64('DEALLOCATE4args offset'), r.u64('DEALLOCATE4args length'));
  },
  63: (r) => {
    r.skip(STATEID, 'IO_ADVISE4args');
    const off = r.u64('IO_ADVISE4args offset');
    const len = r.u64('IO_ADVISE4args count');
    bitmap(r);
    return range(off, len);
  },
  64: (r) => {
    r.skip(16 + STATEID, 'LAYOUTERROR4args');
    r.skip(r.count('LAYOUTERROR4args errors', MAX_ITEMS) * 24, 'device_error4');
    return '';
  },
  66: fixed(STATEID),
  67: fixed(STATEID),
  68: (r) => {
    r.skip(STATEID, 'READ_PLUS4args');
    return range(r.u64('READ_PLUS4args offset'), r.u32('READ_PLUS4args count'));
  },
  69: (r) => {
    r.skip(STATEID, 'SEEK4args');
    const off = r.u64('SEEK4args offset');
    return `off ${off} ${r.u32('SEEK4args what') === 0 ? 'data' : 'hole'}`;
  },
  71: (r) => {
    r.skip(2 * STATEID, 'CLONE4args');
    const src = r.u64('CLONE4args src_offset');
    const dst = r.u64('CLONE4args dst_offset');
    return `src ${src} dst ${dst} len ${r.u64('CLONE4args count')}`;
  },
  72: (r) => name(r, 'GETXATTR4args name'),
  73: (r) => {
    r.skip(4, 'SETXATTR4args option');
    const n = name(r, 'SETXATTR4args key');
    r.opaque('SETXATTR4args value');
    return n;
  },
  74: fixed(8 + 4),
  75: (r) => name(r, 'REMOVEXATTR4args name'),
  10044: none,
};

/** Reads operation `op`'s arguments; returns its key arguments in words ('' for none), or null when the decoder does not know their layout. */
export function readNfs4Args(r: XdrReader, op: number, ddp: boolean): string | null {
  const read = ARGS[op];
  return read === undefined ? null : read(r, ddp);
}

type ResultReader = (r: XdrReader, ddp: boolean) => boolean;
const done: ResultReader = () => true;
const skipping =
  (n: number): ResultReader =>
  (r) => {
    r.skip(n, 'NFSv4 result');
    return true;
  };

function lockDenied(r: XdrReader): boolean {
  r.skip(20, 'LOCK4denied');
  lockOwner(r);
  return true;
}

function delegation(r: XdrReader): boolean {
  const type = r.u32('open_delegation4');
  if (type === 0) return true;
  if (type === 3) {
    const why = r.u32('open_none_delegation4');
    if (why === 1 || why === 2) r.skip(4, 'open_none_delegation4');
    return true;
  }
  if (type !== 1 && type !== 2) return false;
  r.skip(STATEID + 4, 'open_delegation4');
  // nfs_space_limit4: a limitby word, then a uint64 size or two uint32s (8 bytes either way).
  if (type === 2) r.skip(12, 'nfs_space_limit4');
  r.skip(12, 'nfsace4');
  r.opaque('nfsace4 who');
  return true;
}

/** Each operation's result when its status is NFS4_OK (RFC 8881 §18, RFC 7862 §15); false when its layout is not read here. */
const OK_RESULTS: Readonly<Record<number, ResultReader>> = {
  3: skipping(8),
  4: skipping(STATEID),
  5: skipping(VERIFIER),
  6: (r) => {
    r.skip(CHANGE_INFO, 'CREATE4resok');
    bitmap(r);
    return true;
  },
  7: done,
  8: done,
  9: (r) => {
    fattr(r);
    return true;
  },
  10: (r) => {
    r.opaque('GETFH4resok');
    return true;
  },
  11: skipping(CHANGE_INFO),
  12: skipping(STATEID),
  13: done,
  14: skipping(STATEID),
  15: done,
  16: done,
  17: done,
  18: (r) => {
    r.skip(STATEID + CHANGE_INFO + 4, 'OPEN4resok');
    bitmap(r);
    return delegation(r);
  },
  19: done,
  20: skipping(STATEID),
  21: skipping(STATEID),
  22: done,
  23: done,
  24: done,
  25: (r, ddp) => {
    r.u32('READ4resok eof');
    r.opaque('READ4resok data', ddp);
    return true;
  },
  26: (r) => {
    r.skip(VERIFIER, 'READDIR4resok');
    for (let i = 0; r.u32('dirlist4 entry') !== 0; i++) {
      if (i >= MAX_ITEMS) return false;
      r.skip(8, 'entry4 cookie');
      r.opaque('entry4 name');
      fattr(r);
    }
    r.skip(4, 'dirlist4 eof');
    return true;
  },
  27: (r) => {
    r.opaque('READLINK4resok');
    return true;
  },
  28: skipping(CHANGE_INFO),
  29: skipping(2 * CHANGE_INFO),
  30: done,
  31: done,
  32: done,
  33: (r) => secinfo(r),
  35: skipping(8 + VERIFIER),
  36: done,
  37: done,
  38: skipping(16),
  39: done,
  40: done,
  41: skipping(SESSIONID + 8),
  42: (r) => {
    r.skip(16, 'EXCHANGE_ID4resok');
    if (r.u32('state_protect4_r') !== 0) return false;
    r.skip(8, 'server_owner4 minor_id');
    r.opaque('server_owner4 major_id');
    r.opaque('eir_server_scope');
    const n = r.count('eir_server_impl_id', 1);
    for (let i = 0; i < n; i++) {
      r.opaque('nfs_impl_id4 domain');
      r.opaque('nfs_impl_id4 name');
      r.skip(NFSTIME, 'nfs_impl_id4 date');
    }
    return true;
  },
  43: (r) => {
    r.skip(SESSIONID + 8, 'CREATE_SESSION4resok');
    channelAttrs(r);
    channelAttrs(r);
    return true;
  },
  44: done,
  45: done,
  47: (r) => {
    r.skip(4, 'device_addr4');
    r.opaque('device_addr4 body');
    bitmap(r);
    return true;
  },
  48: (r) => {
    r.skip(8 + VERIFIER, 'GETDEVICELIST4resok');
    r.skip(r.count('GETDEVICELIST4resok devices', MAX_ITEMS) * 16, 'GETDEVICELIST4resok devices');
    r.skip(4, 'GETDEVICELIST4resok eof');
    return true;
  },
  49: (r) => {
    if (r.u32('newsize4') !== 0) r.skip(8, 'newsize4');
    return true;
  },
  50: (r) => {
    r.skip(4 + STATEID, 'LAYOUTGET4resok');
    const n = r.count('LAYOUTGET4resok layouts', MAX_ITEMS);
    for (let i = 0; i < n; i++) {
      r.skip(24, 'layout4');
      r.opaque('layout_content4 body');
    }
    return true;
  },
  51: (r) => {
    if (r.u32('layoutreturn_stateid') !== 0) r.skip(STATEID, 'layoutreturn_stateid');
    return true;
  },
  52: (r) => secinfo(r),
  53: skipping(SESSIONID + 20),
  54: (r) => {
    r.opaque('SET_SSV4resok digest');
    return true;
  },
  55: (r) => {
    r.skip(r.count('TEST_STATEID4resok', MAX_ITEMS) * 4, 'TEST_STATEID4resok');
    return true;
  },
  56: (r) => delegation(r),
  57: done,
  58: done,
  59: done,
  60: (r) => {
    r.skip(r.count('write_response4 callback_id', 1) * STATEID, 'write_response4');
    r.skip(8 + 4 + VERIFIER + 8, 'COPY4resok');
    return true;
  },
  61: (r) => {
    r.skip(NFSTIME + STATEID, 'COPY_NOTIFY4resok');
    const n = r.count('COPY_NOTIFY4resok source_server', MAX_ITEMS);
    for (let i = 0; i < n; i++) netloc(r);
    return true;
  },
  62: done,
  63: (r) => {
    bitmap(r);
    return true;
  },
  64: done,
  65: done,
  66: done,
  67: (r) => {
    r.skip(8, 'OFFLOAD_STATUS4resok count');
    r.skip(r.count('OFFLOAD_STATUS4resok complete', 1) * 4, 'OFFLOAD_STATUS4resok complete');
    return true;
  },
  68: (r) => {
    r.skip(4, 'READ_PLUS4resok eof');
    const n = r.count('READ_PLUS4resok contents', MAX_ITEMS);
    for (let i = 0; i < n; i++) {
      if (r.u32('read_plus_content') === 0) {
        r.skip(8, 'data4 offset');
        r.opaque('data4 data');
      } else r.skip(16, 'data_info4');
    }
    return true;
  },
  69: skipping(12),
  71: done,
  72: (r) => {
    r.opaque('GETXATTR4resok value');
    return true;
  },
  73: skipping(CHANGE_INFO),
  74: (r) => {
    r.skip(8, 'LISTXATTRS4resok cookie');
    const n = r.count('LISTXATTRS4resok names', MAX_ITEMS);
    for (let i = 0; i < n; i++) r.opaque('xattrkey4');
    r.skip(4, 'LISTXATTRS4resok eof');
    return true;
  },
  75: skipping(CHANGE_INFO),
  10044: done,
};

function secinfo(r: XdrReader): boolean {
  const n = r.count('SECINFO4resok', MAX_ITEMS);
  for (let i = 0; i < n; i++) {
    if (r.u32('secinfo4 flavor') === 6) {
      r.opaque('rpcsec_gss_info oid');
      r.skip(8, 'rpcsec_gss_info');
    }
  }
  return true;
}

/** Reads operation `op`'s result after its status; false when the decoder does not know its layout. */
export function readNfs4Result(r: XdrReader, op: number, status: number, ddp: boolean): boolean {
  // SETATTR's attrsset is there whatever the status (RFC 8881 §18.30.2).
  if (op === 34) {
    bitmap(r);
    return true;
  }
  if (status === 0) {
    const read = OK_RESULTS[op];
    return read === undefined ? false : read(r, ddp);
  }
  if (status === NFS4ERR_DENIED && (op === 12 || op === 13)) return lockDenied(r);
  if (status === NFS4ERR_CLID_INUSE && op === 35) {
    netaddr(r);
    return true;
  }
  if (status === NFS4ERR_OFFLOAD_NO_REQS && op === 60) {
    r.skip(8, 'copy_requirements4');
    return true;
  }
  return true;
}
