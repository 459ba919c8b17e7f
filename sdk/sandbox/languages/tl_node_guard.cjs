// Preloaded (--require) into every node test process from the read-only task folder, before any
// test or solution code: the assert and node:test modules the tests use cannot be patched and
// require() cannot be redirected (issue 14). Assignments to them fail (silently in sloppy mode).
'use strict';
const Module = require('module');
const assert = require('assert');
for (const m of [assert, assert.strict, require('assert/strict'), require('node:test')]) Object.freeze(m);
Object.freeze(assert.AssertionError.prototype);
for (const k of ['_load', '_resolveFilename']) Object.defineProperty(Module, k, { writable: false, configurable: false });
Object.defineProperty(Module.prototype, 'require', { writable: false, configurable: false });
