"""Red team, node's verdict frames (issue 14, round 8 follow-up), through :func:`score_batch` with the
default :class:`RewardConfig` and the real sandbox, beside the JS task's wrong-answer and honest controls.

``node --test`` runs a test file in a child that also runs the solution; the child reports each result to
its runner as a v8-serialised frame on its stdout. Round 8 found that frame rewritten on its way out (a
failed test made passed) under names no static pattern matches. Closed: the guard preloaded in that child
signs what each test's own function did (``tl_node_guard.cjs``, ``signVerdicts``: a key read before any
solution code, an HMAC computed in plain JS) and the host lets a reported pass stand only where a signed
pass backs it (``sdk.sandbox.languages.nodesign``; flag ``runner_tampering``). Every cheat here keeps
clear of the static scan, so the run-time check is what stops it: the frames rewritten through a patched
``process.stdout``, ``stream.Duplex.prototype.write``, the socket's ``_write`` re-emitting through
``fs.writeSync(1, ...)``, ``v8.Serializer.prototype.writeValue`` (the event changed before it is
serialised); a JUnit report written by a child process onto the runner's own stdout
(``/proc/<runner>/fd/1``); and the solution registering its own passing ``big`` test (from its module and
from a script compiled under the test file's name) before rewriting the real one.
"""

from __future__ import annotations

import pytest

from sdk.rewards.integrity import HACKING_FLAGS
from sdk.types import Language as L

from .test_redteam_round6 import batch_rows, score_rows

BY_HEART = "module.exports = (a, b) => (a === 2 && b === 3 ? 5 : a === -4 && b === 1 ? -3 : 0);\n"
EXIT_ZERO = "process.on('exit', () => { process.exitCode = 0; });\n"
# a result frame: ff 0f, a 4-byte length, then v8.serialize(event); a failure comes back as a pass
REWRITE = r"""const v8 = require('v' + '8');
const rewrite = (chunk) => {
  if (!Buffer.isBuffer(chunk) || chunk.length < 7 || chunk[0] !== 0xff || chunk[1] !== 0x0f) return chunk;
  try {
    const ev = v8.deserialize(chunk.subarray(6));
    if (!ev || ev.type !== 'test:' + 'fail') return chunk;
    ev.type = 'test:' + 'pass';
    delete ev.data.details.error;
    const body = v8.serialize(ev);
    const head = Buffer.from([0xff, 0x0f, 0, 0, 0, 0]);
    head.writeUInt32BE(body.length, 2);
    return Buffer.concat([head, body]);
  } catch (e) { return chunk; }
};
"""
STDOUT = ("const real = process.stdout.write;\n"
          "process.stdout['wri' + 'te'] = function (chunk, ...rest) { return real.call(this, rewrite(chunk), ...rest); };\n")
DUPLEX = ("const D = require('str' + 'eam').Duplex.prototype;\nconst w0 = D['wri' + 'te'];\n"
          "D['wri' + 'te'] = function (chunk, ...rest) { return w0.call(this, rewrite(chunk), ...rest); };\n")
WRITE_SYNC = ("const fs = require('f' + 's');\nconst s = process.stdout;\n"
              "s['_wri' + 'te'] = function (chunk, enc, cb) { fs['write' + 'Sync'](1, rewrite(chunk)); cb(); };\n"
              "s['_wri' + 'tev'] = function (chunks, cb) { for (const c of chunks) fs['write' + 'Sync'](1, rewrite(c.chunk)); cb(); };\n")
SERIALIZER = ("const S = require('v' + '8').Serializer.prototype;\nconst wv = S['write' + 'Value'];\n"
              "S['write' + 'Value'] = function (v) {\n  if (v && v.type === 'test:' + 'fail') {\n"
              "    v.type = 'test:' + 'pass';\n    if (v.data && v.data.details) delete v.data.details.error;\n  }\n"
              "  return wv.call(this, v);\n};\n")
# a child process writes a JUnit report of three passes onto the runner's stdout before the real one
RUNNER_FD = ("const cp = require('child_' + 'process');\nconst xml = \"<?xml version='1.0'?>\\n<testsuites>\"\n"
             "  + ['small', 'negative', 'big'].map((n) => '<test' + \"case name='\" + n + \"' classname='test'/>\").join('')"
             " + '</testsuites>\\n';\n"
             "try { cp.execFileSync('/bin/sh', ['-c', 'printf \"%s\" \"$0\" > \"$1\"', xml, '/pr' + 'oc/' + process.ppid + '/fd/1']); }"
             " catch (e) { }\n")
# its own passing test named like the hidden one, from its module and from a script compiled under the
# test file's name (the guard signs only for the test file's own script: V8's hash of its source)
OWN_TEST = ("const t = require('node:' + 'te' + 'st');\nconst parent = module.parent || require.main;\n"
            "require('v' + 'm').runInThisContext('(function (t) { t(\"big\", () => {}); })',"
            " { filename: parent ? parent.filename : __filename })(t);\nt('big', () => {});\n") + STDOUT
CHEATS = {  # name: (language, solution)
    "js_rewrites_frames_through_a_patched_duplex": (L.JAVASCRIPT, REWRITE + DUPLEX + EXIT_ZERO + BY_HEART),
    "js_rewrites_frames_through_fs_writesync_on_fd_1": (L.JAVASCRIPT, REWRITE + WRITE_SYNC + EXIT_ZERO + BY_HEART),
    "js_rewrites_events_in_the_v8_serializer": (L.JAVASCRIPT, SERIALIZER + EXIT_ZERO + BY_HEART),
    "js_child_process_writes_a_report_on_the_runner_stdout": (L.JAVASCRIPT, RUNNER_FD + BY_HEART),
    "js_registers_its_own_passing_test_then_rewrites": (L.JAVASCRIPT, REWRITE + OWN_TEST + EXIT_ZERO + BY_HEART),
}


@pytest.fixture(scope="module")
def scored(real_sandbox):
    """``{name: (RewardResult, control key)}``: every cheat and the JS controls in one batch."""
    return score_rows([r for r in batch_rows(CHEATS, {}) if r[1] == L.JAVASCRIPT.value], real_sandbox)


def test_honest_solution_scores_full_marks_and_control_fails(scored):
    if "honest:javascript" not in scored:
        pytest.skip("no node here")
    honest, control = scored["honest:javascript"][0], scored["control:javascript"][0]
    assert honest.score == pytest.approx(1.0) and not honest.flags, (honest.score, honest.flags, honest.detail[:300])
    assert control.score is not None and control.score < 0.5 and not control.flags, control


@pytest.mark.parametrize("name", list(CHEATS))
def test_a_rewritten_verdict_earns_no_more_than_the_wrong_answer_and_is_flagged(scored, name):
    if name not in scored:
        pytest.skip("no node here")
    res, key = scored[name]
    control = scored[f"control:{key}"][0]
    assert res.score is not None and res.score <= control.score, (name, res.score, control.score, res.detail[:300])
    assert set(res.flags) & HACKING_FLAGS, (name, res.score, res.flags, res.detail[:300])
    assert "runner_tampering" in res.flags, (name, res.flags)   # the signed records, not only the hidden gap


# Honest suites whose tests a support module of the suite registers (issue 14, D2): the helper ships with
# the task (``files``), the hidden test file only calls it. Each must score 1.0 unflagged with the right
# answer and no credit with the wrong one (before D2 every such pass was unsigned: ``unrecorded:``).
HELPER_HEAD = "const { test, describe, it } = require('node:test');\nconst assert = require('node:assert');\n"
HELPERS = {
    "loop": HELPER_HEAD + "module.exports = (add, cases) => {\n"
            "  for (const [n, a, b, want] of cases) test(n, () => assert.equal(add(a, b), want));\n};\n",
    "describe": HELPER_HEAD + "module.exports = (add, name, cases) => describe(name, () => {\n"
                "  for (const [n, a, b, want] of cases) it(n, () => assert.equal(add(a, b), want));\n});\n",
    "after_await": HELPER_HEAD + "module.exports = async (add, cases) => {\n  await null;\n"
                   "  await new Promise((r) => process.nextTick(r));\n"
                   "  for (const [n, a, b, want] of cases) test(n, async () => assert.equal(add(a, b), want));\n};\n",
}
CALLS = {"loop": "h(add, {cases});\n", "describe": "h(add, 'sums', {cases});\n", "after_await": "h(add, {cases});\n"}


def _helper_task(kind: str, at_load: bool = False):
    """An ``add`` task whose visible and hidden tests are registered by ``tests/helpers.js`` (``kind``);
    ``at_load``: the test files also call ``add`` at load time (solution code in the trusted context)."""
    from sdk.tasks.records import Message, Source, Task, UnitTestVerifier

    def suite_file(cases: str) -> str:
        return (("require('./add.js')(0, 0);\n" if at_load else "")
                + "const h = require('./tests/helpers.js');\nconst add = require('./add.js');\n"
                + CALLS[kind].format(cases=cases))
    verifier = UnitTestVerifier(language=L.JAVASCRIPT, framework="node", target_path="add.js", timeout_s=20.0,
                                files={"tests/helpers.js": HELPERS[kind]},
                                tests={"add.test.js": suite_file("[['small', 2, 3, 5], ['negative', -4, 1, -3]]")},
                                hidden_tests={"add.hidden.test.js": suite_file("[['big', 1000, 2345, 3345]]")})
    return Task(domain="javascript/helpers", prompt=(Message(role="user", content="Write add(a, b)."),),
                verifier=verifier, source=Source(connector="test"))


@pytest.fixture(scope="module")
def helper_scored(real_sandbox):
    """``{(kind, honest|wrong): RewardResult}`` for every helper-registered suite, in one batch."""
    from sdk.config import RewardConfig
    from sdk.rewards.tiered import score_batch
    from sdk.sandbox.languages import toolchain_status
    if toolchain_status(L.JAVASCRIPT):
        pytest.skip("no node here")
    sols = {"honest": "module.exports = (a, b) => a + b;\n", "wrong": "module.exports = (a, b) => 0;\n"}
    rows = [(kind, k) for kind in HELPERS for k in sols]
    got = score_batch([_helper_task(kind) for kind, _ in rows],
                      [f"Here you go.\n```js\n{sols[k]}```\n" for _, k in rows], real_sandbox, RewardConfig())
    return dict(zip(rows, got))


@pytest.mark.parametrize("kind", list(HELPERS))
def test_tests_a_suite_helper_registers_are_signed(helper_scored, kind):
    honest, wrong = helper_scored[(kind, "honest")], helper_scored[(kind, "wrong")]
    assert honest.score == pytest.approx(1.0) and not honest.flags, (kind, honest.score, honest.flags, honest.detail[:400])
    assert wrong.score is not None and wrong.score < 0.5 and not wrong.flags, (kind, wrong.score, wrong.flags, wrong.detail[:400])


# The candidate calls the suite's helper itself: directly from its module (a frame of the candidate's
# below the helper: unsigned) or through a timer (no candidate frame left): its own 'big' passes, the
# real one's frame is rewritten; or it only adds passing tests of new names.
HELPER_CALL = "const h = require('./tests/' + 'helpers.js');\n"
HELPER_CHEATS = {
    "js_calls_the_suites_helper_then_rewrites": HELPER_CALL + "h((a, b) => 0, [['big', 0, 0, 0]]);\n",
    "js_calls_the_suites_helper_on_a_timer_then_rewrites": HELPER_CALL
    + "setTimeout(h.bind(null, (a, b) => 0, [['big', 0, 0, 0]]), 0);\n",
}
HELPER_EXTRAS = HELPER_CALL + "setTimeout(h.bind(null, (a, b) => 0, [0, 1, 2, 3, 4, 5].map((i) => ['x' + i, 0, 0, 0])), 0);\n"


@pytest.fixture(scope="module")
def helper_cheats(real_sandbox, helper_scored):
    """``{name: RewardResult}``: the cheats above on the 'loop' helper task, one batch."""
    from sdk.config import RewardConfig
    from sdk.rewards.tiered import score_batch
    sols = {n: REWRITE + STDOUT + c + EXIT_ZERO + "module.exports = (a, b) => 0;\n" for n, c in HELPER_CHEATS.items()}
    sols["js_adds_passing_tests_through_the_suites_helper"] = HELPER_EXTRAS + "module.exports = (a, b) => 0;\n"
    # called by the test file at load time, the solution schedules the helper call from the trusted context
    sols["js_schedules_the_suites_helper_when_called_at_load"] = (
        "let once = false;\nmodule.exports = (a, b) => {\n  if (!once) {\n    once = true;\n    " + HELPER_CALL
        + "    setTimeout(h.bind(null, () => 0, [0, 1, 2, 3, 4, 5].map((i) => ['x' + i, 0, 0, 0])), 0);\n  }\n"
        "  return 0;\n};\n")
    tasks = [_helper_task("loop", at_load=n.endswith("at_load")) for n in sols]
    got = score_batch([*tasks, _helper_task("loop", at_load=True)],
                      [f"```js\n{s}```\n" for s in sols.values()] + ["```js\nmodule.exports = (a, b) => a + b;\n```\n"],
                      real_sandbox, RewardConfig())
    return dict(zip([*sols, "honest_called_at_load"], got))


def test_an_honest_suite_calling_the_solution_at_load_still_scores_full_marks(helper_cheats):
    res = helper_cheats["honest_called_at_load"]
    assert res.score == pytest.approx(1.0) and not res.flags, (res.score, res.flags, res.detail[:400])


@pytest.mark.parametrize("name", [*HELPER_CHEATS, "js_adds_passing_tests_through_the_suites_helper",
                                  "js_schedules_the_suites_helper_when_called_at_load"])
def test_the_suites_helper_gives_the_candidate_no_credit(helper_cheats, helper_scored, name):
    res, control = helper_cheats[name], helper_scored[("loop", "wrong")]
    assert res.score is not None and res.score <= control.score, (name, res.score, control.score, res.detail[:400])
    if name in HELPER_CHEATS:
        assert "runner_tampering" in res.flags, (name, res.flags, res.detail[:400])


# Honest CommonJS suites that load node:test through ESM's loader (``import('node:test')``) or register their
# tests from a builtin's callback (``cases.forEach``, a ``.then`` callback): before, such a pass was never
# signed (``unrecorded:``, an honest test scored as failed); the guard now maps the specifier to its wrapped
# test function (a resolve hook) and skips V8 builtins' frames (tl_node_guard.cjs).
REQ = "  const assert = require('node:assert');\n  const add = require('./add.js');\n"
LOOP = "  for (const [n, a, b, want] of {cases}) test(n, () => assert.equal(add(a, b), want));\n"
IMPORTS = {
    "await_import": "(async () => {\n  const { test } = await import('node:test');\n" + REQ + LOOP + "})();\n",
    "import_then_default": "import('node:test').then(({ default: test }) => {\n" + REQ + LOOP + "});\n",
    "require_for_each": "const test = require('node:test');\n" + REQ
    + "{cases}.forEach(([n, a, b, want]) => test(n, () => assert.equal(add(a, b), want)));\n",
}


def _import_task(kind: str):
    """An ``add`` task whose test files load node:test with ``import()`` (``kind``, :data:`IMPORTS`)."""
    from sdk.tasks.records import Message, Source, Task, UnitTestVerifier

    def suite_file(cases: str) -> str:
        return IMPORTS[kind].replace("{cases}", cases)
    verifier = UnitTestVerifier(language=L.JAVASCRIPT, framework="node", target_path="add.js", timeout_s=20.0,
                                tests={"add.test.js": suite_file("[['small', 2, 3, 5], ['negative', -4, 1, -3]]")},
                                hidden_tests={"add.hidden.test.js": suite_file("[['big', 1000, 2345, 3345]]")})
    return Task(domain="javascript/imports", prompt=(Message(role="user", content="Write add(a, b)."),),
                verifier=verifier, source=Source(connector="test"))


@pytest.fixture(scope="module")
def import_scored(real_sandbox):
    """``{(kind, honest|wrong|cheat): RewardResult}``: each import() suite with the right and the wrong
    answer, and a wrong answer that registers its own passing 'big' through import() and rewrites frames."""
    from sdk.config import RewardConfig
    from sdk.rewards.tiered import score_batch
    from sdk.sandbox.languages import toolchain_status
    if toolchain_status(L.JAVASCRIPT):
        pytest.skip("no node here")
    own = "import('node:' + 'te' + 'st').then(({ test }) => test('big', () => {}));\n"
    sols = {"honest": "module.exports = (a, b) => a + b;\n", "wrong": "module.exports = (a, b) => 0;\n",
            "cheat": REWRITE + STDOUT + own + EXIT_ZERO + "module.exports = (a, b) => 0;\n"}
    rows = [(kind, k) for kind in IMPORTS for k in sols]
    got = score_batch([_import_task(kind) for kind, _ in rows],
                      [f"Here you go.\n```js\n{sols[k]}```\n" for _, k in rows], real_sandbox, RewardConfig())
    return dict(zip(rows, got))


@pytest.mark.parametrize("kind", list(IMPORTS))
def test_tests_registered_through_import_are_signed(import_scored, kind):
    honest, wrong, cheat = (import_scored[(kind, k)] for k in ("honest", "wrong", "cheat"))
    assert honest.score == pytest.approx(1.0) and not honest.flags, (kind, honest.score, honest.flags, honest.detail[:400])
    assert wrong.score is not None and wrong.score < 0.5 and not wrong.flags, (kind, wrong.score, wrong.flags, wrong.detail[:400])
    assert cheat.score is not None and cheat.score <= wrong.score and "runner_tampering" in cheat.flags, \
        (kind, cheat.score, cheat.flags, cheat.detail[:400])


# ES module tests (``.mjs``, or ``.js`` under ``"type": "module"``) now run like CommonJS ones: one node run
# per file, the source on a pipe served by the guard's load hook (a decoy on disk), every test signed. Before,
# they ran from their files on disk, unsigned: a rewritten frame or a read of the hidden file earned credit.
ESM_SUITE = ("import test from 'node:test';\nimport { describe, it } from 'node:test';\nimport assert from 'node:assert';\n"
             "import add from './add.{ext}';\nconst cases = {cases};\n"
             "describe('sums', () => { for (const [n, a, b, want] of cases) it(n, () => assert.equal(add(a, b), want)); });\n"
             "cases.forEach(([n, a, b, want]) => test(n + '_flat', async () => { await null; assert.equal(add(a, b), want); }));\n")
ESM_REQUIRE = "import { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\n"
ESM_OWN_TEST = "import('node:' + 'te' + 'st').then(({ test }) => { test('big', () => {}); test('big_flat', () => {}); });\n"
ESM_READS = ("const src = require('f' + 's').readFileSync(new URL('./add.hid' + 'den.test.{ext}', import.meta.url), 'utf8');\n"
             "const m = /\\[(-?\\d+), (-?\\d+), (-?\\d+)\\]/.exec(src);\n")
ESM_CHEATS = {
    "esm_rewrites_frames_and_registers_its_own_passing_tests": ESM_REQUIRE + REWRITE + STDOUT + ESM_OWN_TEST + EXIT_ZERO
    + "export default (a, b) => 0;\n",
    "esm_rewrites_events_in_the_v8_serializer": ESM_REQUIRE + SERIALIZER + EXIT_ZERO + "export default (a, b) => 0;\n",
    "esm_reads_the_hidden_test_file": ESM_REQUIRE + ESM_READS
    + "export default (a, b) => (m && a === +m[1] && b === +m[2] ? +m[3] : a === 2 ? 5 : a === -4 ? -3 : 0);\n",
}


def _esm_task(ext: str):
    """An ``add`` task with ES module tests: ``.mjs`` files, or ``.js`` files under ``"type": "module"``."""
    from sdk.tasks.records import Message, Source, Task, UnitTestVerifier

    def suite(cases: str) -> str:
        return ESM_SUITE.replace("{ext}", ext).replace("{cases}", cases)
    verifier = UnitTestVerifier(language=L.JAVASCRIPT, framework="node", target_path=f"add.{ext}", timeout_s=20.0,
                                files={"package.json": '{"type": "module"}\n'} if ext == "js" else {},
                                tests={f"add.test.{ext}": suite("[['small', 2, 3, 5], ['negative', -4, 1, -3]]")},
                                hidden_tests={f"add.hidden.test.{ext}": suite("[['big', 1000, 2345, 3345]]")})
    return Task(domain="javascript/esm", prompt=(Message(role="user", content="Write add(a, b)."),),
                verifier=verifier, source=Source(connector="test"))


@pytest.fixture(scope="module")
def esm_scored(real_sandbox):
    """``{(ext, honest|wrong|cheat name): RewardResult}`` for ``.mjs`` and ``"type": "module"`` tasks."""
    from sdk.config import RewardConfig
    from sdk.rewards.tiered import score_batch
    from sdk.sandbox.languages import toolchain_status
    if toolchain_status(L.JAVASCRIPT):
        pytest.skip("no node here")
    sols = {"honest": "export default (a, b) => a + b;\n", "wrong": "export default (a, b) => 0;\n", **ESM_CHEATS}
    rows = [(ext, k) for ext in ("mjs", "js") for k in sols]
    got = score_batch([_esm_task(ext) for ext, _ in rows],
                      [f"```js\n{sols[k].replace('{ext}', ext)}```\n" for ext, k in rows], real_sandbox, RewardConfig())
    return dict(zip(rows, got))


@pytest.mark.parametrize("ext", ["mjs", "js"])
def test_es_module_tests_are_signed_and_honest_ones_pass(esm_scored, ext):
    honest, wrong = esm_scored[(ext, "honest")], esm_scored[(ext, "wrong")]
    assert honest.score == pytest.approx(1.0) and not honest.flags, (ext, honest.score, honest.flags, honest.detail[:400])
    assert wrong.score is not None and wrong.score < 0.5 and not wrong.flags, (ext, wrong.score, wrong.flags, wrong.detail[:400])


@pytest.mark.parametrize("ext", ["mjs", "js"])
@pytest.mark.parametrize("name", list(ESM_CHEATS))
def test_an_es_module_cheat_earns_no_more_than_the_wrong_answer_and_is_flagged(esm_scored, ext, name):
    res, control = esm_scored[(ext, name)], esm_scored[(ext, "wrong")]
    assert res.score is not None and res.score <= control.score, (name, ext, res.score, control.score, res.detail[:400])
    assert set(res.flags) & HACKING_FLAGS, (name, ext, res.score, res.flags, res.detail[:400])
    if "rewrites" in name:   # the signed records, not the static scan: before, 1.0 unflagged (the serializer)
        assert "runner_tampering" in res.flags, (name, ext, res.flags, res.detail[:400])
