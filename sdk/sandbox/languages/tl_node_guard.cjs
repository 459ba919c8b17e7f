// Preloaded (--require) into every node test process from the read-only task folder, before any
// test or solution code: the assert and node:test modules the tests use cannot be patched and
// require() cannot be redirected (issue 14). Assignments to them fail (silently in sloppy mode).
'use strict';
const Module = require('module');
const assert = require('assert');
for (const m of [assert, assert.strict, require('assert/strict'), require('node:test')]) Object.freeze(m);
Object.freeze(assert.AssertionError.prototype);
// With test dependencies (TL_NODE_DEPS: their read-only folder) a bare require('x') from a file outside
// that folder looks only in its node_modules, never in the writable build folder, where code under test
// could plant a fake package before a test requires it (ESM static imports resolve before any code runs).
const deps = process.env.TL_NODE_DEPS;
if (deps) {
  const own = Module._nodeModulePaths;
  const inside = deps.replace(/\/$/, '') + '/';
  Module._nodeModulePaths = function (from) {
    return (from + '/').startsWith(inside) ? own.call(this, from) : [inside + 'node_modules'];
  };
}
for (const k of ['_load', '_resolveFilename', '_nodeModulePaths']) {
  Object.defineProperty(Module, k, { writable: false, configurable: false });
}
Object.defineProperty(Module.prototype, 'require', { writable: false, configurable: false });
