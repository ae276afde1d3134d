/** Typed errors: one base, instanceof by brand for every class of the chain, across module copies, never across siblings. */
import { RoceError } from '../../base/roce-error';
import { ProgrammingError, ProgrammingErrorCode, internalError } from '../../base/programming-error';
import { WireError, WireErrorCode } from '../../packets/errors';
import { VerbsError, VerbsErrorCode } from '../../stack/errors';
import { NativeErrorCode, NicDriverError } from '../../nic-driver/native-binding';
import { UsageError } from '../../cli/args';

test('instanceof holds for the class and RoceError, not for its siblings or plain errors', () => {
  const w = new WireError(WireErrorCode.Truncated, 3, 'short');
  const v = new VerbsError(VerbsErrorCode.InvalidArgument, 'bad');
  expect(w).toBeInstanceOf(WireError);
  expect(w).toBeInstanceOf(RoceError);
  expect(w).toBeInstanceOf(Error);
  expect(w instanceof VerbsError).toBe(false);
  expect(v instanceof WireError).toBe(false);
  expect(v).toBeInstanceOf(RoceError);
  expect(new Error('x') instanceof WireError).toBe(false);
  expect(new Error('x') instanceof RoceError).toBe(false);
  expect((null as unknown) instanceof WireError).toBe(false);
  expect(w.name).toBe('WireError');
  expect(w.code).toBe('ROCE_ERR_TRUNCATED');
  expect(w.message).toBe('short (at byte 3)');
  expect(new UsageError('u')).toBeInstanceOf(UsageError);
  expect(new UsageError('u').code).toBe('ROCE_ERR_USAGE');
});

test('a subclass of a typed error is an instance of every class up to RoceError', () => {
  class ShortFrame extends WireError {}
  const e = new ShortFrame(WireErrorCode.Truncated, 0, 'x');
  expect(e).toBeInstanceOf(ShortFrame);
  expect(e).toBeInstanceOf(WireError);
  expect(e).toBeInstanceOf(RoceError);
  expect(e.name).toBe('ShortFrame');
  expect(new WireError(WireErrorCode.Truncated, 0, 'x') instanceof ShortFrame).toBe(false);
});

test('the fields of the subclasses survive the base constructor', () => {
  const n = new NicDriverError(NativeErrorCode.System, 'socket: failed', 24);
  expect(n).toMatchObject({ name: 'NicDriverError', code: 'ROCE_ERR_SYSTEM', errno: 24, message: 'socket: failed' });
  expect(internalError('cannot be')).toMatchObject({ name: 'ProgrammingError', code: ProgrammingErrorCode.Internal, message: 'internal: cannot be' });
  expect(new ProgrammingError(ProgrammingErrorCode.Misuse, 'closed')).toBeInstanceOf(RoceError);
});

test('a copy of the modules (a second jest registry) still recognises the error, by class and by base', () => {
  let Other: typeof WireError | undefined;
  let OtherBase: typeof RoceError | undefined;
  jest.isolateModules(() => {
    Other = (jest.requireActual('../../packets/errors') as { WireError: typeof WireError }).WireError;
    OtherBase = (jest.requireActual('../../base/roce-error') as { RoceError: typeof RoceError }).RoceError;
  });
  expect(Other).toBeDefined();
  expect(Other).not.toBe(WireError);
  expect(OtherBase).not.toBe(RoceError);
  expect(new WireError(WireErrorCode.BadIcrc, 0, 'x')).toBeInstanceOf(Other as typeof WireError);
  expect(new WireError(WireErrorCode.BadIcrc, 0, 'x')).toBeInstanceOf(OtherBase as typeof RoceError);
  expect(new (Other as typeof WireError)(WireErrorCode.BadIcrc, 0, 'x')).toBeInstanceOf(RoceError);
});

test('a wire error describes input data: its reason and offset, and no stack; other errors keep theirs', () => {
  const limit = Error.stackTraceLimit;
  const w = new WireError(WireErrorCode.BadLength, 42, 'READ_RESPONSE_MIDDLE must carry one path MTU');
  expect(w.reason).toBe('READ_RESPONSE_MIDDLE must carry one path MTU');
  expect(w.message).toBe(`${w.reason} (at byte 42)`);
  expect(w.stack ?? '').not.toContain('\n    at ');
  expect(new VerbsError(VerbsErrorCode.InvalidArgument, 'bad').stack).toContain('\n    at ');
  expect(new ProgrammingError(ProgrammingErrorCode.Misuse, 'closed').stack).toContain('\n    at ');
  // Left as it was found.
  expect(Error.stackTraceLimit).toBe(limit);
});

test('the brands are on the classes, made once: an error has no symbol of its own', () => {
  const a = new WireError(WireErrorCode.Truncated, 0, 'x');
  const b = new VerbsError(VerbsErrorCode.InvalidArgument, 'bad');
  expect(Object.getOwnPropertySymbols(a)).toEqual([]);
  expect(Object.getOwnPropertySymbols(b)).toEqual([]);
  expect(a).toBeInstanceOf(WireError);
  expect(b instanceof WireError).toBe(false);
});
