/** Typed errors: instanceof by brand, across module copies, and never across classes. */
import { WireError, WireErrorCode } from '../../packets/errors';
import { VerbsError, VerbsErrorCode } from '../../stack/errors';
import { UsageError } from '../../cli/args';

test('instanceof holds for the class, not for its siblings or plain errors', () => {
  const w = new WireError(WireErrorCode.Truncated, 3, 'short');
  const v = new VerbsError(VerbsErrorCode.InvalidArgument, 'bad');
  expect(w).toBeInstanceOf(WireError);
  expect(w).toBeInstanceOf(Error);
  expect(w instanceof VerbsError).toBe(false);
  expect(v instanceof WireError).toBe(false);
  expect(new Error('x') instanceof WireError).toBe(false);
  expect((null as unknown) instanceof WireError).toBe(false);
  expect(w.name).toBe('WireError');
  expect(w.message).toBe('short (at byte 3)');
  expect(new UsageError('u')).toBeInstanceOf(UsageError);
});

test('a copy of the module (a second jest registry) still recognises the error', () => {
  let Other: typeof WireError | undefined;
  jest.isolateModules(() => {
    Other = (jest.requireActual('../../packets/errors') as { WireError: typeof WireError }).WireError;
  });
  expect(Other).toBeDefined();
  expect(Other).not.toBe(WireError);
  expect(new WireError(WireErrorCode.BadIcrc, 0, 'x')).toBeInstanceOf(Other as typeof WireError);
});
