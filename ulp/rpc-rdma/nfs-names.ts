/**
 * Names of the ONC RPC programs and NFS procedures the decoder shows: NFS is program 100003
 * (RFC 5531 appendix, IANA); version 3's procedures (RFC 1813 §3), version 4's two procedures
 * (NULL, COMPOUND: RFC 7530 §16, RFC 8881 §16) and the operations of a COMPOUND (RFC 8881 §18,
 * RFC 7862 §15 for 4.2's).
 */
export const NFS_PROGRAM = 100003;
export const NFS4_COMPOUND = 1;

const PROGRAMS: ReadonlyMap<number, string> = new Map([
  [100000, 'Portmap'],
  [100003, 'NFS'],
  [100005, 'MOUNT'],
  [100021, 'NLM'],
  [100024, 'STAT'],
  [100227, 'NFS_ACL'],
]);

const NFS3_PROCS: readonly string[] = [
  'NULL',
  'GETATTR',
  'SETATTR',
  'LOOKUP',
  'ACCESS',
  'READLINK',
  'READ',
  'WRITE',
  'CREATE',
  'MKDIR',
  'SYMLINK',
  'MKNOD',
  'REMOVE',
  'RMDIR',
  'RENAME',
  'LINK',
  'READDIR',
  'READDIRPLUS',
  'FSSTAT',
  'FSINFO',
  'PATHCONF',
  'COMMIT',
];

/** NFSv4 operation numbers (nfs_opnum4) from 3 (ACCESS) to 75 (REMOVEXATTR, RFC 8276). */
const NFS4_OPS: Readonly<Record<number, string>> = {
  3: 'ACCESS',
  4: 'CLOSE',
  5: 'COMMIT',
  6: 'CREATE',
  7: 'DELEGPURGE',
  8: 'DELEGRETURN',
  9: 'GETATTR',
  10: 'GETFH',
  11: 'LINK',
  12: 'LOCK',
  13: 'LOCKT',
  14: 'LOCKU',
  15: 'LOOKUP',
  16: 'LOOKUPP',
  17: 'NVERIFY',
  18: 'OPEN',
  19: 'OPENATTR',
  20: 'OPEN_CONFIRM',
  21: 'OPEN_DOWNGRADE',
  22: 'PUTFH',
  23: 'PUTPUBFH',
  24: 'PUTROOTFH',
  25: 'READ',
  26: 'READDIR',
  27: 'READLINK',
  28: 'REMOVE',
  29: 'RENAME',
  30: 'RENEW',
  31: 'RESTOREFH',
  32: 'SAVEFH',
  33: 'SECINFO',
  34: 'SETATTR',
  35: 'SETCLIENTID',
  36: 'SETCLIENTID_CONFIRM',
  37: 'VERIFY',
  38: 'WRITE',
  39: 'RELEASE_LOCKOWNER',
  40: 'BACKCHANNEL_CTL',
  41: 'BIND_CONN_TO_SESSION',
  42: 'EXCHANGE_ID',
  43: 'CREATE_SESSION',
  44: 'DESTROY_SESSION',
  45: 'FREE_STATEID',
  46: 'GET_DIR_DELEGATION',
  47: 'GETDEVICEINFO',
  48: 'GETDEVICELIST',
  49: 'LAYOUTCOMMIT',
  50: 'LAYOUTGET',
  51: 'LAYOUTRETURN',
  52: 'SECINFO_NO_NAME',
  53: 'SEQUENCE',
  54: 'SET_SSV',
  55: 'TEST_STATEID',
  56: 'WANT_DELEGATION',
  57: 'DESTROY_CLIENTID',
  58: 'RECLAIM_COMPLETE',
  59: 'ALLOCATE',
  60: 'COPY',
  61: 'COPY_NOTIFY',
  62: 'DEALLOCATE',
  63: 'IO_ADVISE',
  64: 'LAYOUTERROR',
  65: 'LAYOUTSTATS',
  66: 'OFFLOAD_CANCEL',
  67: 'OFFLOAD_STATUS',
  68: 'READ_PLUS',
  69: 'SEEK',
  70: 'WRITE_SAME',
  71: 'CLONE',
  72: 'GETXATTR',
  73: 'SETXATTR',
  74: 'LISTXATTRS',
  75: 'REMOVEXATTR',
  10044: 'ILLEGAL',
};

export const Nfs4Op = {
  ACCESS: 3,
  GETATTR: 9,
  GETFH: 10,
  LOOKUP: 15,
  PUTFH: 22,
  PUTROOTFH: 24,
  READ: 25,
  REMOVE: 28,
  RESTOREFH: 31,
  SAVEFH: 32,
  WRITE: 38,
  SEQUENCE: 53,
} as const;

export function programName(prog: number): string {
  return PROGRAMS.get(prog) ?? `program ${prog}`;
}

/** The procedure's name: NFSv3's by number, NFSv4's NULL and COMPOUND, else `proc N`. */
export function procedureName(prog: number, vers: number, proc: number): string {
  if (prog === NFS_PROGRAM && vers === 3) return NFS3_PROCS[proc] ?? `proc ${proc}`;
  if (prog === NFS_PROGRAM && vers === 4) return proc === 0 ? 'NULL' : proc === NFS4_COMPOUND ? 'COMPOUND' : `proc ${proc}`;
  return proc === 0 ? 'NULL' : `proc ${proc}`;
}

export function nfs4OpName(op: number): string {
  return NFS4_OPS[op] ?? `op ${op}`;
}
