// Preloaded (--require) into every node test process from the read-only task folder, before any
// test or solution code: the assert and node:test modules the tests use cannot be patched and
// require() cannot be redirected (issue 14). Assignments to them fail (silently in sloppy mode).
'use strict';
const Module = require('module');
// A test file's source on a pipe (TL_TEST_FD, tl_build.py's run_each): read once, before any test or
// solution code, by the test's own process (node --test's child), and compiled from memory in place
// of the decoy on disk (issue 14, round 6: a solution read the tests from the folder under any name).
// With TL_REC_FD the pipe starts with a 32-byte key: the guard signs each test's own outcome with it
// (signVerdicts, below; tl_offdisk.py checks the records against node's report).
const testFd = process.env.TL_TEST_FD;
const recFd = process.env.TL_REC_FD;
if (testFd !== undefined && process.env.NODE_TEST_CONTEXT) {
  const fs = require('fs');
  const chunks = [];
  const buf = Buffer.alloc(1 << 16);
  for (let n; (n = fs.readSync(Number(testFd), buf, 0, buf.length, null)) > 0;) chunks.push(Buffer.from(buf.subarray(0, n)));
  fs.closeSync(Number(testFd));
  delete process.env.TL_TEST_FD;
  let data = Buffer.concat(chunks);
  let key = null;
  if (recFd !== undefined) {
    key = Uint8Array.from(data.subarray(0, 32));
    data.fill(0, 0, 32);
    data = data.subarray(32);
    delete process.env.TL_REC_FD;
  }
  let source = data.toString('utf8');
  if (source.charCodeAt(0) === 0xFEFF) source = source.slice(1);
  // The test file runs in strict mode (round 11; signed and hashed as compiled): V8 then hides it, and every frame
  // outside it, from code it calls: a call site's getFunction() (Error.prepareStackTrace) and add.caller give no
  // test function whose source holds the expected values. Same lines: the directive joins the first (after #!).
  const bang = source[0] === '#' && source[1] === '!' ? source.indexOf('\n') + 1 : 0;
  if (!(source[0] === '#' && bang === 0)) source = source.slice(0, bang) + "'use strict';" + source.slice(bang);
  const target = require('path').resolve(process.argv[1]);
  let trust = {};   // the suite's helpers: relative path -> SHA-256 of its source (nodesign.trusted_hashes)
  try { trust = JSON.parse(process.env.TL_NODE_TRUST || '{}'); } catch (e) { /* none */ }
  delete process.env.TL_NODE_TRUST;
  const helpers = new Map(Object.keys(trust).map((p) => [require('path').resolve(p), trust[p]]));
  // scope(trusted, fn): fn run as hidden test material (signVerdicts) or not; hash(text): its SHA-256 hex
  const { scope, hash } = key !== null ? signVerdicts(key, Number(recFd), source, Object.values(trust))
    : { scope: (t, fn) => fn(), hash: () => '' };
  if (key !== null) esmHooks(target, source, helpers, scope);
  // (all captured now: a helper may load after solution code patched Map, String or Module.prototype)
  const js = Module._extensions['.js'], readFileSync = fs.readFileSync, compile = Module.prototype._compile;
  const { apply } = Reflect, mapGet = Map.prototype.get, strSlice = String.prototype.slice;
  Module._extensions['.js'] = function (module, filename) {
    if (filename === target) return scope(true, () => apply(compile, module, [source, filename]));
    const want = apply(mapGet, helpers, [filename]);
    if (want === undefined) return scope(false, () => apply(js, this, [module, filename]));
    let text = apply(readFileSync, fs, [filename, 'utf8']);   // a helper of the suite: as shipped, or rewritten
    if (text[0] === '\uFEFF') text = apply(strSlice, text, [1]);
    return scope(hash(text) === want, () => apply(compile, module, [text, filename]));
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

// Signed verdicts (issue 14, round 8). node --test's child reports each result as a v8-serialised frame on
// its stdout, which the solution shares: a frame rewritten on its way out (at any level: a patched stream,
// fs.writeSync(1), a child process, the parent's descriptors) made a failure a pass. The guard therefore
// wraps the function of every test the test file itself registers (test/it and their skip/todo/only, and
// t.test for subtests) and, when it returns, resolves or calls back, appends `<mac> <seq> passed|failed
// <hex name>` to TL_REC_FD, the MAC an HMAC-SHA256 under a key read above before any solution code (kept
// only in this closure; computed here in plain JS on typed arrays, so no patched method sees it).
// tl_offdisk.confirm_node then lets a reported pass stand only where a signed pass backs it. "The test
// file itself" is the script whose V8 hash (CallSite.getScriptHash: SHA-256 of its source) is the hidden
// source's: code that compiles another script under the test file's name is no caller we sign for.
function signVerdicts(key, fd, source, trust) {
  const { apply } = Reflect;
  const { defineProperty, getPrototypeOf, getOwnPropertyDescriptor, freeze } = Object;
  const U8 = Uint8Array, U32 = Uint32Array, charCodeAt = String.prototype.charCodeAt;
  const writeSync = require('fs').writeSync, isPromise = require('util').types.isPromise;
  const then = Promise.prototype.then, capture = Error.captureStackTrace, bufFrom = Buffer.from;
  const setHas = Set.prototype.has, startsWith = String.prototype.startsWith;
  // The async context of hidden test material: the test file's load and a trusted helper's (and what they
  // schedule: an async helper's tests after an await), never a candidate module's load nor a test's body
  // (where solution code runs and could schedule a call of a helper). TRUSTED is private: no code under
  // test can store it on a resource of its own.
  const { AsyncLocalStorage } = require('async_hooks');
  const als = new AsyncLocalStorage(), TRUSTED = Object.freeze({});
  const alsRun = AsyncLocalStorage.prototype.run, alsGet = AsyncLocalStorage.prototype.getStore;
  const scope = (trusted, fn) => apply(alsRun, als, [trusted ? TRUSTED : undefined, fn]);
  const loading = () => apply(alsGet, als, []) === TRUSTED;
  const want = new Set(trust);   // V8's hashes of the test file's script (added below) and the suite's helpers
  let mine = false, theirs;
  const callSites = (e, cs) => cs;   // ours only while the guard reads a caller; theirs is kept otherwise
  defineProperty(Error, 'prepareStackTrace', { get() { return mine ? callSites : theirs; }, set(v) { theirs = v; }, configurable: false });
  defineProperty(globalThis, 'Error', { value: Error, writable: false, configurable: false });
  const sites = (entry) => {   // the call sites above entry (stackTraceLimit set by the code under test: ours here)
    const o = {}, limit = Error.stackTraceLimit;
    mine = true;
    try { Error.stackTraceLimit = 24; capture(o, entry); return o.stack; } finally { mine = false; Error.stackTraceLimit = limit; }
  };
  const scriptHash = getPrototypeOf(sites(signVerdicts)[0]).getScriptHash;
  const fileName = getPrototypeOf(sites(signVerdicts)[0]).getFileName;
  const isEval = getPrototypeOf(sites(signVerdicts)[0]).isEval;
  // A V8 builtin's frame (Array.prototype.forEach, Promise.prototype.then: no script, file null) is no one's
  // code: skipped. Before, `cases.forEach(([n, ...]) => test(n, ...))` or `import('node:test').then(...)`
  // in the test file itself went unsigned (an honest test scored as not passed). Code made by eval,
  // Function or vm has a script and a hash of its own (never skipped).
  const builtin = (c) => apply(fileName, c, []) === null && apply(scriptHash, c, []) === '' && !apply(isEval, c, []);
  want.add(apply(scriptHash, sites(signVerdicts)[0], []));   // this guard's own frames (its require hooks)
  // May this registration be signed? Its caller's script is hidden test material (the test file or a
  // helper shipped with the suite, by V8's hash of its source: never the candidate's module, nor a script
  // it compiled through vm/eval/Function/_compile, whatever its name), and so is every frame below it
  // that is not node's own: a solution calling a helper of the suite registers nothing signed.
  const ours = (cs, from) => {   // every frame of cs from index `from` on is node's or hidden test material
    for (let i = from; i < cs.length; i++) {
      const f = apply(fileName, cs[i], []);
      if ((typeof f === 'string' && apply(startsWith, f, ['node:'])) || builtin(cs[i])) continue;
      if (!apply(setHas, want, [apply(scriptHash, cs[i], [])])) return false;
    }
    return true;
  };
  const fromTests = (entry) => {
    try {
      const cs = sites(entry);
      let first = 0;   // the caller: the first frame that is not a builtin's (cases.map(test))
      while (first < cs.length && builtin(cs[first])) first++;
      return first < cs.length && apply(setHas, want, [apply(scriptHash, cs[first], [])]) && ours(cs, 0);
    } catch (e) { return false; }
  };
  // Solution code that the test file calls at load time runs in the trusted context: what it schedules
  // there (a timer, a tick, a promise: any async resource made with its frame on the stack) is not.
  // Cost: where node's root test is made in the trusted context (a top-level describe first), its runner's
  // own resources are walked too: ~0.45 ms of CPU per test (bench/node_signing.py --before 5469c27).
  apply(alsRun, als, [{}, () => {}]);   // enables node's own propagation hook first: this one runs after it
  const kStore = als.kResourceStore;
  const init = function init(id, type, trigger, res) {
    if (res === null || typeof res !== 'object' || res[kStore] !== TRUSTED) return;
    let mineOnly = false;
    try { mineOnly = ours(sites(init), 0); } catch (e) { /* unknown: not trusted */ }
    if (!mineOnly) res[kStore] = undefined;
  };
  require('async_hooks').createHook({ init }).enable();
  const K = new U32(64), H0 = new U32(8), W = new U32(64), H = new U32(8);
  const seed = '428a2f98 71374491 b5c0fbcf e9b5dba5 3956c25b 59f111f1 923f82a4 ab1c5ed5 d807aa98 12835b01 243185be 550c7dc3 72be5d74 80deb1fe 9bdc06a7 c19bf174 e49b69c1 efbe4786 0fc19dc6 240ca1cc 2de92c6f 4a7484aa 5cb0a9dc 76f988da 983e5152 a831c66d b00327c8 bf597fc7 c6e00bf3 d5a79147 06ca6351 14292967 27b70a85 2e1b2138 4d2c6dfc 53380d13 650a7354 766a0abb 81c2c92e 92722c85 a2bfe8a1 a81a664b c24b8b70 c76c51a3 d192e819 d6990624 f40e3585 106aa070 19a4c116 1e376c08 2748774c 34b0bcb5 391c0cb3 4ed8aa4a 5b9cca4f 682e6ff3 748f82ee 78a5636f 84c87814 8cc70208 90befffa a4506ceb bef9a3f7 c67178f2 6a09e667 bb67ae85 3c6ef372 a54ff53a 510e527f 9b05688c 1f83d9ab 5be0cd19'.split(' ');
  for (let i = 0; i < 72; i++) (i < 64 ? K : H0)[i < 64 ? i : i - 64] = parseInt(seed[i], 16);
  const sha = (m, n) => {   // SHA-256 of the first n bytes of m (a Uint8Array); its 32 bytes
    const total = ((n + 72) >>> 6) << 6, b = new U8(total), out = new U8(32);
    for (let i = 0; i < n; i++) b[i] = m[i];
    b[n] = 0x80;
    for (let i = 0, bits = n * 8; i < 4; i++) b[total - 1 - i] = (bits >>> (8 * i)) & 255;
    for (let i = 0; i < 8; i++) H[i] = H0[i];
    for (let o = 0; o < total; o += 64) {
      for (let i = 0; i < 16; i++) W[i] = (b[o + 4 * i] << 24) | (b[o + 4 * i + 1] << 16) | (b[o + 4 * i + 2] << 8) | b[o + 4 * i + 3];
      for (let i = 16; i < 64; i++) {
        const x = W[i - 15], y = W[i - 2];
        W[i] = W[i - 16] + (((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3)) + W[i - 7]
          + (((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10));
      }
      let a = H[0], c1 = H[1], c2 = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
      for (let i = 0; i < 64; i++) {
        const t1 = (h + (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))) + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
        const t2 = ((((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) + ((a & c1) ^ (a & c2) ^ (c1 & c2))) | 0;
        h = g; g = f; f = e; e = (d + t1) | 0; d = c2; c2 = c1; c1 = a; a = (t1 + t2) | 0;
      }
      H[0] += a; H[1] += c1; H[2] += c2; H[3] += d; H[4] += e; H[5] += f; H[6] += g; H[7] += h;
    }
    for (let i = 0; i < 32; i++) out[i] = (H[i >>> 2] >>> (24 - 8 * (i & 3))) & 255;
    return out;
  };
  const HEX = '0123456789abcdef';
  const utf8Hex = (s, bytes) => {   // s as UTF-8, hex-encoded; or bytes [Uint8Array, length]
    let out = '';
    const put = (v) => { out += HEX[v >>> 4] + HEX[v & 15]; };
    if (bytes) { for (let i = 0; i < bytes[1]; i++) put(bytes[0][i]); return out; }
    for (let i = 0; i < s.length; i++) {
      let c = apply(charCodeAt, s, [i]);
      if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
        const lo = apply(charCodeAt, s, [i + 1]);
        if (lo >= 0xdc00 && lo < 0xe000) { c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00); i++; }
      }
      if (c >= 0xd800 && c < 0xe000) c = 0xfffd;
      if (c < 0x80) put(c);
      else if (c < 0x800) { put(0xc0 | (c >>> 6)); put(0x80 | (c & 63)); }
      else if (c < 0x10000) { put(0xe0 | (c >>> 12)); put(0x80 | ((c >>> 6) & 63)); put(0x80 | (c & 63)); }
      else { put(0xf0 | (c >>> 18)); put(0x80 | ((c >>> 12) & 63)); put(0x80 | ((c >>> 6) & 63)); put(0x80 | (c & 63)); }
    }
    return out;
  };
  const src = Buffer.from(source, 'utf8');   // (before any solution code) V8 hashes a script's UTF-8 source
  want.add(utf8Hex('', [sha(src, src.length), 32]));
  const pads = new U8(128);   // key ^ ipad, key ^ opad; the key itself is then wiped
  for (let i = 0; i < 64; i++) { pads[i] = (i < 32 ? key[i] : 0) ^ 0x36; pads[64 + i] = (i < 32 ? key[i] : 0) ^ 0x5c; }
  key.fill(0);
  const hmac = (m, n) => {
    const inner = new U8(64 + n), outer = new U8(96);
    for (let i = 0; i < 64; i++) { inner[i] = pads[i]; outer[i] = pads[64 + i]; }
    for (let i = 0; i < n; i++) inner[64 + i] = m[i];
    const ih = sha(inner, 64 + n);
    for (let i = 0; i < 32; i++) outer[64 + i] = ih[i];
    return sha(outer, 96);
  };
  let seq = 0, nameOf = null, ownTest = null;
  const record = (passed, name) => {
    const body = seq + ' ' + (passed ? 'passed' : 'failed') + ' ' + utf8Hex(typeof name === 'string' ? name : '');
    seq++;
    const m = new U8(body.length);
    for (let i = 0; i < body.length; i++) m[i] = apply(charCodeAt, body, [i]);
    try { writeSync(fd, utf8Hex('', [hmac(m, body.length), 16]) + ' ' + body + '\n'); } catch (e) { /* closed: unconfirmed */ }
  };
  const subtests = (t) => {   // the test's name, read from node's TestContext; its t.test wrapped too
    try {
      if (nameOf === null) {   // the first test's context, before any test ran: nothing patched it yet
        nameOf = getOwnPropertyDescriptor(getPrototypeOf(t), 'name').get;
        ownTest = getPrototypeOf(t).test;
      }
      const sub = function test(name, options, fn) {
        return apply(ownTest, t, fromTests(sub) ? wrapArgs(name, options, fn) : [name, options, fn]);
      };
      defineProperty(t, 'test', { value: sub, writable: false, configurable: false });
      return apply(nameOf, t, []);
    } catch (e) { return undefined; }   // no context: a record without a name confirms nothing
  };
  const noop = function noop() {};
  const wrapFn = (fn) => {   // node calls fn(t) or, when fn.length is 2, fn(t, done)
    const real = typeof fn === 'function' ? fn : noop;
    const w = function () {
      const name = subtests(arguments[0]);
      const done = arguments[1];
      const args = typeof done === 'function'
        ? [arguments[0], function (err) { record(!err, name); return apply(done, this, arguments); }] : arguments;
      let r;
      const self = this;
      try { r = scope(false, () => apply(real, self, args)); } catch (e) { record(false, name); throw e; }
      if (typeof done === 'function') return r;
      if (!isPromise(r)) { record(true, name); return r; }
      return apply(then, r, [(v) => { record(true, name); return v; }, (e) => { record(false, name); throw e; }]);
    };
    defineProperty(w, 'length', { value: real.length });
    defineProperty(w, 'name', { value: real.name });
    return w;
  };
  const wrapArgs = (name, options, fn) => {   // node's own reading of (name, options, fn): createSubtest
    if (typeof name === 'function') return [wrapFn(name), options, fn];
    if ((name !== null && typeof name === 'object') || typeof options === 'function') return [name, wrapFn(options), fn];
    return [name, options, wrapFn(fn)];
  };
  const nt = require('node:test');
  const factory = (orig) => {
    const f = function test(name, options, fn) {   // node's test object (and a root made here) outside
      const self = this, args = loading() && fromTests(f) ? wrapArgs(name, options, fn) : [name, options, fn];
      return scope(false, () => apply(orig, self, args));   // the trusted context: its work is not walked
    };
    return f;
  };
  const wt = factory(nt);
  for (const k of ['skip', 'todo', 'only']) wt[k] = factory(nt[k]);
  for (const k of ['after', 'afterEach', 'before', 'beforeEach', 'describe', 'run', 'suite', 'mock', 'snapshot']) {
    const d = getOwnPropertyDescriptor(nt, k);
    if (d !== undefined) defineProperty(wt, k, d);
  }
  wt.it = wt;
  wt.test = wt;
  freeze(nt);
  const load = Module._load;
  Module._load = function _load(request) { return request === 'node:test' ? wt : apply(load, this, arguments); };
  const hash = (text) => { const b = apply(bufFrom, Buffer, [text, 'utf8']); return utf8Hex('', [sha(b, b.length), 32]); };
  return { scope, hash };
}

// ES modules (issue 14): node's ESM loader, not Module._load or Module._extensions, loads them. One hooks
// module (Module.register: node's hooks thread) maps `node:test` (a static import or import() in a test file
// or a helper, ESM or CommonJS) to a module that takes the guard's wrapped test function through
// Module._load, and serves an ES module test file from memory (node's resolve gives its format without
// opening the decoy on disk); node runs that main entry through Module.runMain, wrapped here so that its
// evaluation (and its imports', the solution's too: as a CommonJS test that calls solution code at load)
// runs in the trusted context. Registered only where it may be needed (an ES module test file, or
// `import(` in the test file's or a helper's text): the hooks thread costs a node run about 39 ms of CPU
// (1.15x a 20-test file; bench/node_signing.py --dynamic --before 08a6693, load 17; without it 1.00x).
function esmHooks(target, source, helpers, scope) {
  const fs = require('fs'), path = require('path'), { pathToFileURL } = require('url');
  const dynamic = (text) => /\bimport\s*\(/.test(text);
  const moduleType = (dir) => {   // the nearest package.json's "type" is "module"
    for (let d = dir, n = 0; n < 64; d = path.dirname(d), n++) {
      try { return JSON.parse(fs.readFileSync(path.join(d, 'package.json'), 'utf8')).type === 'module'; } catch (e) { /* none here */ }
      if (path.dirname(d) === d) return false;
    }
    return false;
  };
  const esm = target.endsWith('.mjs') || (target.endsWith('.js') && moduleType(path.dirname(target)));
  const helperText = (p) => { try { return fs.readFileSync(p, 'utf8'); } catch (e) { return ''; } };
  if (typeof Module.register !== 'function' || !(esm || dynamic(source) || [...helpers.keys()].some((p) => dynamic(helperText(p))))) return;
  const names = Object.keys(require('node:test')).filter((k) => /^[A-Za-z_$][\w$]*$/.test(k) && k !== 'default');
  const shim = 'data:text/javascript,' + encodeURIComponent("import { createRequire } from 'node:module';\n"
    + "const t = createRequire('/tl-node-test.cjs')('node:test');\nexport default t;\n"
    + names.map((k) => 'export const ' + k + ' = t.' + k + ';\n').join(''));
  let url = null;
  try { url = pathToFileURL(fs.realpathSync(target)).href; } catch (e) { /* no decoy: nothing to serve */ }
  const HOOKS = `let shim, url, source;
export function initialize(d) { shim = d.shim; url = d.url; source = d.source; }
export async function resolve(s, c, next) { return s === 'node:test' ? { url: shim, shortCircuit: true } : next(s, c); }
export async function load(u, c, next) {
  if (u !== url || source === null || c.format !== 'module') return next(u, c);
  const text = source;
  source = null;   // served once: the test file's own load
  return { format: 'module', source: text, shortCircuit: true };
}`;
  Module.register('data:text/javascript,' + encodeURIComponent(HOOKS), { data: { shim, url, source: esm ? source : null } });
  if (esm) {
    const runMain = Module.runMain, { apply } = Reflect;
    Module.runMain = function runMain_(...args) { return scope(true, () => apply(runMain, this, args)); };
  }
}
