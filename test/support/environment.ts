/** Jest setup: a test run honours ROCE_NO_NATIVE=1 as the `roce` command does (apps/host/environment.ts), so the tests that need the addon skip. */
import { applyNativeSwitch } from '../../apps/host/environment';

applyNativeSwitch(process.env);
