// Preloaded (--require) into every node test process from the read-only task folder, before any
// test or solution code: the assert and node:test modules the tests use cannot be patched and
// require() cannot be redirected (issue 14). Assignments to them fail (silently in sloppy mode).
'use strict';
const Module = require('module');
// A test file's source on a pipe (TL_TEST_FD, tl_build.py's run_each): read once, before any test or
// solution code, by the test's own process (node --test's child), and compiled from memory in place
// of the decoy on disk (issue 14, round 6: a solution read the tests from the folder under any name).
const testFd = process.env.TL_TEST_FD;
if (testFd !== undefined && process.env.NODE_TEST_CONTEXT) {
  const fs = require('fs');
  const chunks = [];
  const buf = Buffer.alloc(1 << 16);
  for (let n; (n = fs.readSync(Number(testFd), buf, 0, buf.length, null)) > 0;) chunks.push(Buffer.from(buf.subarray(0, n)));
  fs.closeSync(Number(testFd));
  delete process.env.TL_TEST_FD;
  let source = Buffer.concat(chunks).toString('utf8');
  if (source.charCodeAt(0) === 0xFEFF) source = source.slice(1);
  const target = require('path').resolve(process.argv[1]);
  const js = Module._extensions['.js'];
  Module._extensions['.js'] = function (module, filename) {
    if (filename !== target) return js.call(this, module, filename);
    return module._compile(source, filename);
  };
}
const assert = require('assert');
for (const m of [assert, assert.strict, require('assert/strict'), require('node:test')]) Object.freeze(m);
Object.freeze(assert.AssertionError.prototype);
// With test dependencies (TL_NODE_DEPS: their read-only folder) a bare require('x') from a file outside
// that folder looks only in its node_modules, never in the writable build folder, where code under test
// could plant a fake package before a test requires it (ESM static imports resolve before any code runs).
const deps = process.env.TL_NODE_DEPS;
const HOOKS = `
let root;
export function initialize(data) { root = data.root; }
export async function resolve(specifier, context, next) {
  const found = await next(specifier, context);
  const bare = !/^(\\.{0,2}\\/|[a-zA-Z][a-zA-Z0-9+.-]*:|#)/.test(specifier);
  if (!bare || !found.url.startsWith('file:') || found.url.startsWith(root)
      || (context.parentURL || '').startsWith(root)) return found;
  let again;
  try { again = await next(specifier, { ...context, parentURL: root + 'tl-anchor.mjs' }); } catch (e) { return found; }
  return again.url.startsWith(root) ? again : found;
}`;
if (deps) {
  const own = Module._nodeModulePaths;
  const inside = deps.replace(/\/$/, '') + '/';
  Module._nodeModulePaths = function (from) {
    return (from + '/').startsWith(inside) ? own.call(this, from) : [inside + 'node_modules'];
  };
  // ESM: import 'x' and import('x') from outside the environment that resolve to a file outside it (a
  // node_modules planted in the build folder) are resolved again from the environment, which wins
  // when it has the package (a self-reference to the task's own package resolves as before).
  if (typeof Module.register === 'function') {
    let real = deps;
    try { real = require('fs').realpathSync(deps); } catch (e) { /* resolution compares real paths */ }
    const root = require('url').pathToFileURL(real.replace(/\/$/, '') + '/').href;
    Module.register('data:text/javascript,' + encodeURIComponent(HOOKS), { data: { root } });
  }
}
// No later resolve hook (they run before ours) may redirect what the tests import.
Object.defineProperty(Module, 'register', {
  value: function register() { throw new Error('module.register is disabled in the sandbox'); },
  writable: false, configurable: false,
});
for (const k of ['_load', '_resolveFilename', '_nodeModulePaths']) {
  Object.defineProperty(Module, k, { writable: false, configurable: false });
}
Object.defineProperty(Module.prototype, 'require', { writable: false, configurable: false });
