#!/usr/bin/env node
'use strict';
/**
 * Makes Jazzer.js's prebuilt libFuzzer addon (@jazzer.js/fuzzer, prebuilds/fuzzer-linux-x64.node)
 * load on glibc 2.36 / libstdc++ 12 (Debian bookworm, this project's machines). The prebuild was
 * linked on a newer system and asks for three symbols those libraries lack:
 *
 *   __isoc23_strtol@GLIBC_2.38, __isoc23_strtoul@GLIBC_2.38   C23 strtol/strtoul: identical to the
 *       classic ones except that they also accept a "0b" prefix; libFuzzer parses its -flag=N
 *       options with them. They are rebound to strtol/strtoul@GLIBC_2.2.5.
 *   std::ios_base_library_init()@GLIBCXX_3.4.32   GCC 13's one-call iostream set-up; with
 *       libstdc++ 12 the streams are set up by the static ios_base::Init objects of the program
 *       (node links libstdc++ dynamically and has them), so the call is rebound to a harmless
 *       function of the same type, std::get_new_handler()@GLIBCXX_3.4.20.
 *
 * The version-needed entries that only those symbols used are pointed at versions the libraries
 * have. Nothing else in the file changes; the original is kept beside it (.orig). Idempotent: a
 * patched file, a file that needs nothing, or no Jazzer installed at all, is left alone.
 *
 *   node scripts/jazzer-glibc-compat.js [path/to/fuzzer-linux-x64.node]
 */
const fs = require('node:fs');
const path = require('node:path');

const REBIND = {
  __isoc23_strtol: { to: 'strtol', version: 'GLIBC_2.2.5' },
  __isoc23_strtoul: { to: 'strtoul', version: 'GLIBC_2.2.5' },
  _ZSt21ios_base_library_initv: { to: '_ZSt15get_new_handlerv', version: 'GLIBCXX_3.4.20' },
};

function elfHash(name) {
  let h = 0;
  for (const c of Buffer.from(name, 'latin1')) {
    h = ((h << 4) + c) >>> 0;
    const g = h & 0xf0000000;
    if (g !== 0) h ^= g >>> 24;
    h &= ~g >>> 0;
  }
  return h >>> 0;
}

function cstr(b, off) {
  let e = off;
  while (b[e] !== 0) e++;
  return b.toString('latin1', off, e);
}

function patch(file) {
  const b = fs.readFileSync(file);
  if (b.readUInt32BE(0) !== 0x7f454c46 || b[4] !== 2 || b[5] !== 1) throw new Error(`${file}: not a 64-bit little-endian ELF file`);
  const shoff = Number(b.readBigUInt64LE(0x28));
  const shentsize = b.readUInt16LE(0x3a);
  const shnum = b.readUInt16LE(0x3c);
  const shstrndx = b.readUInt16LE(0x3e);
  const sec = (i) => {
    const o = shoff + i * shentsize;
    return {
      name: b.readUInt32LE(o),
      type: b.readUInt32LE(o + 4),
      offset: Number(b.readBigUInt64LE(o + 0x18)),
      size: Number(b.readBigUInt64LE(o + 0x20)),
      link: b.readUInt32LE(o + 0x28),
      info: b.readUInt32LE(o + 0x2c),
      entsize: Number(b.readBigUInt64LE(o + 0x38)),
    };
  };
  const shstr = sec(shstrndx);
  const byName = new Map();
  for (let i = 0; i < shnum; i++) {
    const s = sec(i);
    byName.set(cstr(b, shstr.offset + s.name), s);
  }
  const dynstr = byName.get('.dynstr');
  const dynsym = byName.get('.dynsym');
  const versym = byName.get('.gnu.version');
  const verneed = byName.get('.gnu.version_r');
  if (!dynstr || !dynsym || !versym || !verneed) throw new Error(`${file}: no dynamic symbol versioning sections`);
  const str = (off) => cstr(b, dynstr.offset + off);

  // Version-needed entries: index -> { name, at (offset of the vernaux entry) }.
  const versions = new Map();
  let vn = verneed.offset;
  for (let n = 0; n < verneed.info; n++) {
    let aux = vn + b.readUInt32LE(vn + 8);
    const cnt = b.readUInt16LE(vn + 2);
    for (let k = 0; k < cnt; k++) {
      versions.set(b.readUInt16LE(aux + 6) & 0x7fff, {
        name: str(b.readUInt32LE(aux + 8)),
        at: aux,
        nameOff: b.readUInt32LE(aux + 8),
        hash: b.readUInt32LE(aux),
      });
      const next = b.readUInt32LE(aux + 12);
      if (next === 0) break;
      aux += next;
    }
    const nextVn = b.readUInt32LE(vn + 12);
    if (nextVn === 0) break;
    vn += nextVn;
  }
  const indexOf = (name) => [...versions.entries()].find(([, v]) => v.name === name)?.[0];

  const count = dynsym.size / dynsym.entsize;
  const freed = new Set();
  let changed = 0;
  for (let i = 0; i < count; i++) {
    const o = dynsym.offset + i * dynsym.entsize;
    const nameOff = b.readUInt32LE(o);
    const name = str(nameOff);
    const r = REBIND[name];
    if (r === undefined) continue;
    const target = indexOf(r.version);
    if (target === undefined) throw new Error(`${file}: ${name}: the file needs no ${r.version} to rebind to`);
    const old = b.readUInt16LE(versym.offset + 2 * i) & 0x7fff;
    // The new name: a suffix of the old one when it is one (no bytes written), else written over it.
    if (name.endsWith(r.to)) b.writeUInt32LE(nameOff + name.length - r.to.length, o);
    else {
      if (r.to.length > name.length) throw new Error(`${file}: ${r.to} is longer than ${name}`);
      b.write(`${r.to}\0`, dynstr.offset + nameOff, 'latin1');
    }
    b.writeUInt16LE(target, versym.offset + 2 * i);
    freed.add(old);
    changed++;
  }
  if (changed === 0) return false;
  // A version that no symbol uses any more is pointed at the version its symbols moved to.
  for (let i = 0; i < count; i++) freed.delete(b.readUInt16LE(versym.offset + 2 * i) & 0x7fff);
  for (const idx of freed) {
    const v = versions.get(idx);
    const moved = Object.values(REBIND).find(
      (r) => versions.get(indexOf(r.version)) !== undefined && v.name.startsWith('GLIBCXX') === r.version.startsWith('GLIBCXX'),
    );
    const to = versions.get(indexOf(moved.version));
    b.writeUInt32LE(to.nameOff, v.at + 8);
    b.writeUInt32LE(elfHash(to.name), v.at);
  }
  if (!fs.existsSync(`${file}.orig`)) fs.copyFileSync(file, `${file}.orig`);
  fs.writeFileSync(file, b);
  return true;
}

function main() {
  const file =
    process.argv[2] ?? path.join(__dirname, '..', 'node_modules', '@jazzer.js', 'fuzzer', 'prebuilds', `fuzzer-${process.platform}-${process.arch}.node`);
  if (process.platform !== 'linux' || process.arch !== 'x64' || !fs.existsSync(file)) return;
  const changed = patch(file);
  if (changed)
    process.stdout.write(
      `jazzer-glibc-compat: ${path.relative(process.cwd(), file)} rebound to glibc 2.2.5 / GLIBCXX_3.4.20 symbols (original kept as .orig)\n`,
    );
}

if (require.main === module) main();
module.exports = { patch, elfHash };
