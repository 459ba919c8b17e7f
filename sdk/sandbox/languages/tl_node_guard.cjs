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
// The running test is node's Test object (an AsyncResource, lib/internal/test_runner/test.js): async_hooks
// handed it to any code in the test's process, which redefined its `passed` and `error` and a failing test
// was reported passed (issue 14, round 8: tests/rewards/test_redteam_round8.py). executionAsyncResource()
// and createHook's init callbacks now see a stand-in for each test runner object (one per object, so a
// property set on it reads back), process.binding('async_wrap') (its execution_async_resources stack) is
// refused, and the inspector cannot connect to this process (Runtime.evaluate / queryObjects reach any
// object). Everything used below is captured here, before any test or solution code could patch it.
{
  const ah = require('async_hooks');
  let inspector = null;
  try { inspector = require('inspector'); } catch (e) { /* a node built without it */ }
  const { apply } = Reflect;
  const { getPrototypeOf, getOwnPropertyDescriptor, defineProperty } = Object;
  const wmGet = WeakMap.prototype.get, wmSet = WeakMap.prototype.set, setHas = Set.prototype.has;
  const realResource = ah.executionAsyncResource, realCreateHook = ah.createHook, realBinding = process.binding;
  const RUNNER = new Set(['Test', 'Suite', 'TestHook', 'TestContext', 'SuiteContext']);
  const standIns = new WeakMap();
  const hide = (res) => {
    if (res === null || (typeof res !== 'object' && typeof res !== 'function')) return res;
    let runner = false;
    for (let p = getPrototypeOf(res), n = 0; p !== null && n < 16 && !runner; p = getPrototypeOf(p), n++) {
      const d = getOwnPropertyDescriptor(p, 'constructor');
      runner = d !== undefined && typeof d.value === 'function' && apply(setHas, RUNNER, [d.value.name]);
    }
    if (!runner) return res;
    let s = apply(wmGet, standIns, [res]);
    if (s === undefined) { s = {}; apply(wmSet, standIns, [res, s]); }
    return s;
  };
  const fixed = (obj, key, value) => defineProperty(obj, key, { value, writable: false, configurable: false, enumerable: true });
  fixed(ah, 'executionAsyncResource', function executionAsyncResource() { return hide(realResource()); });
  fixed(ah, 'createHook', function createHook(callbacks) {
    const init = callbacks && callbacks.init;
    const own = { before: callbacks && callbacks.before, after: callbacks && callbacks.after,
                  destroy: callbacks && callbacks.destroy, promiseResolve: callbacks && callbacks.promiseResolve };
    if (typeof init === 'function') own.init = function (id, type, trigger, res) { return apply(init, this, [id, type, trigger, hide(res)]); };
    return realCreateHook(own);
  });
  defineProperty(process, 'binding', {
    value: function binding(name) {
      if (String(name) === 'async_wrap') throw new Error("process.binding('async_wrap') is disabled in the sandbox");
      return apply(realBinding, process, [name]);
    }, writable: false, configurable: false,
  });
  const refuse = function connect() { throw new Error('the inspector is disabled in the sandbox'); };
  if (inspector) {
    for (const k of ['connect', 'connectToMainThread']) fixed(inspector.Session.prototype, k, refuse);
    fixed(inspector, 'open', refuse);
  }
}
