// The node test reporter (loaded from the read-only task folder): node's own JUnit reporter, but a
// test file that fails as a whole (it threw while loading: `Cannot find module 'x'`,
// ERR_MODULE_NOT_FOUND, a syntax error; or it exited non-zero) keeps the tail of its stderr as the
// failure's text. Node's reporter says only "test failed" there, and the cause is lost (issue 13).
// Only the message changes, never an outcome; the JUnit reporter escapes the text.
'use strict';
const { junit } = require('node:test/reporters');
const KEEP = 3000;

async function* withLoadErrors(source) {
  const stderr = new Map();
  for await (const ev of source) {
    const d = ev.data || {};
    if (ev.type === 'test:stderr' && typeof d.file === 'string') {
      stderr.set(d.file, ((stderr.get(d.file) || '') + String(d.message)).slice(-KEEP));
    } else if (ev.type === 'test:fail' && d.file && d.name === d.file && stderr.get(d.file) && d.details) {
      const err = new Error('test failed');
      err.stack = 'the test file failed as a whole; its stderr:\n' + stderr.get(d.file);
      err.failureType = 'testCodeFailure';
      d.details.error = err;
    }
    yield ev;
  }
}

module.exports = async function* report(source) { yield* junit(withLoadErrors(source)); };
