'use strict';
/**
 * jest's node environment, with each test file's global object an ordinary one.
 *
 * jest-environment-node makes the sandbox with `vm.createContext(proxy)`: a contextified global,
 * whose every lookup of a global name (`Math`, `Number`, `Uint8Array`, ...) V8 sends through
 * Node's interceptors, uncached. Code that does arithmetic in a loop ran 15-40 times slower under
 * jest than under node (the DCQCN fluid integration: 33 s against 0.8 s). A context made with
 * `vm.constants.DONT_CONTEXTIFY` has an ordinary global object, looked up at native speed, and is
 * still a separate realm per test file. What is lost is only jest's deletion at teardown of the
 * globals a test file set (testEnvironmentOptions.globalsCleanup), which frees memory sooner.
 * On a Node without the constant the environment is jest's own.
 */
const vm = require('node:vm');
const { TestEnvironment } = require('jest-environment-node');

const DONT_CONTEXTIFY = vm.constants?.DONT_CONTEXTIFY;

class OrdinaryGlobalEnvironment extends TestEnvironment {
  constructor(config, context) {
    if (DONT_CONTEXTIFY === undefined) {
      super(config, context);
      return;
    }
    // The parent constructor's one call to vm.createContext makes the context; everything else
    // (Node's globals copied in, timers, the module mocker) it does as usual on that global.
    const createContext = vm.createContext;
    vm.createContext = () => createContext(DONT_CONTEXTIFY);
    try {
      super(config, context);
    } finally {
      vm.createContext = createContext;
    }
  }
}

module.exports = OrdinaryGlobalEnvironment;
