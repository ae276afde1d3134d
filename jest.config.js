/**
 * Jest runs the TypeScript sources directly through SWC; `tsc` does the type checking.
 * One project per test group (test/support/test-groups.js): `npx jest` runs them all,
 * `npx jest --selectProjects unit` (npm run test:unit) the inner loop.
 */
const { GROUP_NAMES, testGroups } = require('./test/support/test-groups');

const { byGroup, problems } = testGroups(__dirname);
if (problems.length > 0) throw new Error(`test groups: ${problems.join('; ')}`);

const shared = {
  rootDir: __dirname,
  testEnvironment: '<rootDir>/test/support/node-environment.js',
  roots: ['<rootDir>/test'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  moduleFileExtensions: ['ts', 'js', 'json'],
  setupFiles: ['<rootDir>/test/support/environment.ts'],
};

/** A group's files by name; an empty list would mean jest's default (every test), so an empty group matches a path that is not there. */
const testMatch = (name) => (byGroup[name].length > 0 ? byGroup[name].map((f) => `<rootDir>/${f}`) : [`<rootDir>/test/no-files-in-group-${name}`]);

module.exports = {
  projects: GROUP_NAMES.map((name) => ({ ...shared, displayName: name, testMatch: testMatch(name) })),
  // A test that starts the CLI a few times takes seconds on a shared 2-core machine with a worker
  // per core; jest's default of 5 s would measure the machine. Tests that need longer say so.
  // Global, not per project: jest reads testTimeout only from the top level.
  testTimeout: 30_000,
  reporters: ['default', '<rootDir>/test/support/skip-reporter.js'],
};
