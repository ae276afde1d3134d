/**
 * The addon's error codes are written twice: `roce::code` in native/src/common.h
 * (`constexpr const char* kXdpBusy = "ROCE_ERR_XDP_BUSY";`) and AddonErrorCode in
 * nic-driver/native-binding.ts (`XdpBusy: 'ROCE_ERR_XDP_BUSY'`). The header is read
 * as text (no native build needed) and the two lists must hold the same names with
 * the same values.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AddonErrorCode, NativeErrorCode } from '../../nic-driver/native-binding';

const HEADER = path.resolve(__dirname, '../../native/src/common.h');

/** The constants of `namespace code { ... }` in a header's text, keyed by name without the `k`. */
function headerCodes(text: string): Map<string, string> {
  const block = /namespace code \{([\s\S]*?)\}\s*\/\/ namespace code/.exec(text);
  if (block === null) throw new Error('no `namespace code { ... }  // namespace code` block');
  const out = new Map<string, string>();
  for (const line of (block[1] as string).split('\n')) {
    const t = line.trim();
    if (t === '' || t.startsWith('//')) continue;
    const m = /^constexpr const char\* k([A-Za-z0-9]+) = "([^"]*)";$/.exec(t);
    if (m === null) throw new Error(`not a code constant: ${t}`);
    out.set(m[1] as string, m[2] as string);
  }
  return out;
}

/** What differs between the header's codes and a TypeScript table, one line per difference. */
function mirrorDiff(header: Map<string, string>, table: Readonly<Record<string, string>>): string[] {
  const diff: string[] = [];
  for (const [name, value] of header) {
    const ts = table[name];
    if (ts === undefined) diff.push(`common.h has k${name} = "${value}", AddonErrorCode has no ${name}`);
    else if (ts !== value) diff.push(`k${name} is "${value}" in common.h but '${ts}' in AddonErrorCode`);
  }
  for (const [name, value] of Object.entries(table)) {
    if (!header.has(name)) diff.push(`AddonErrorCode has ${name}: '${value}', common.h has no k${name}`);
  }
  return diff;
}

const headerText = fs.readFileSync(HEADER, 'utf8');

test('common.h and AddonErrorCode hold the same codes with the same values', () => {
  const header = headerCodes(headerText);
  expect(header.size).toBeGreaterThan(0);
  expect(mirrorDiff(header, AddonErrorCode)).toEqual([]);
});

test('every addon code is a NicDriverError code (NativeErrorCode), under the same name', () => {
  for (const [name, value] of Object.entries(AddonErrorCode)) expect((NativeErrorCode as Record<string, string>)[name]).toBe(value);
});

test('a code on one side only, or a changed value, is reported', () => {
  const extraInHeader = headerText.replace('namespace code {', 'namespace code {\nconstexpr const char* kNoCarrier = "ROCE_ERR_NO_CARRIER";');
  expect(mirrorDiff(headerCodes(extraInHeader), AddonErrorCode)).toEqual(['common.h has kNoCarrier = "ROCE_ERR_NO_CARRIER", AddonErrorCode has no NoCarrier']);
  expect(mirrorDiff(headerCodes(headerText), { ...AddonErrorCode, NoCarrier: 'ROCE_ERR_NO_CARRIER' })).toEqual([
    "AddonErrorCode has NoCarrier: 'ROCE_ERR_NO_CARRIER', common.h has no kNoCarrier",
  ]);
  expect(mirrorDiff(headerCodes(headerText), { ...AddonErrorCode, XdpBusy: 'ROCE_XDP_BUSY' })).toEqual([
    `kXdpBusy is "ROCE_ERR_XDP_BUSY" in common.h but 'ROCE_XDP_BUSY' in AddonErrorCode`,
  ]);
  expect(() => headerCodes(headerText.replace('namespace code {', 'namespace code {\nconst char* kOdd = "X";'))).toThrow(/not a code constant/);
});
