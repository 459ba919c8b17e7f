"""Issue 13, item 2 (Node half): a JS repository's npm test dependencies, installed once into a cached
read-only ``node_modules`` that the sandbox links beside the task. Offline: the package is a tarball
made here with ``npm pack``; the error path points npm's registry at a closed local port."""

from __future__ import annotations

import json
import shutil
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from connectors.suites.file_tasks import SourceFilesSource
from connectors.suites.npmreqs import absolute_spec, find_node_requirements
from sdk.config import SandboxConfig
from sdk.errors import ConfigError, SourceError
from sdk.sandbox import make_sandbox
from sdk.sandbox.npmdeps import TOOLS, find_node_env, npm_error, split_spec
from sdk.tasks.validate import request_for, validate_tasks

needs_npm = pytest.mark.skipif(shutil.which("node", path=TOOLS) is None or shutil.which("npm", path=TOOLS) is None,
                               reason="needs node and npm in /usr/local/bin:/usr/bin:/bin")
REFUSED = """npm error code ECONNREFUSED
npm error syscall connect
npm error FetchError: request to http://127.0.0.1:9/nope failed, reason: connect ECONNREFUSED 127.0.0.1:9
npm error     at ClientRequest.<anonymous> (/usr/lib/node_modules/npm/lib/index.js:130:14)
npm error     at process.processTicksAndRejections (node:internal/process/task_queues:83:21) {
npm error   code: 'ECONNREFUSED',
npm error   requiredBy: '.'
npm error }
npm error
npm error If you are behind a proxy, please make sure that the 'proxy' config is set properly.
npm error A complete log of this run can be found in: /x/_logs/debug-0.log
"""
OUT_OF_SYNC = """npm error code EUSAGE
npm error
npm error `npm ci` can only install packages when your package.json and package-lock.json are in sync.
npm error
npm error Missing: left-pad@1.3.0 from lock file
npm error
npm error Clean install a project
npm error
npm error Usage:
npm error npm ci
npm error   --install-strategy
"""


def test_specs_paths_and_error_lines(tmp_path):
    assert split_spec("lodash@^4.17.21") == ("lodash", "^4.17.21")
    assert split_spec("@scope/pkg@1.2.3") == ("@scope/pkg", "1.2.3") and split_spec("left-pad") == ("left-pad", "*")
    assert absolute_spec("file:vendor/x.tgz", tmp_path) == f"file:{tmp_path}/vendor/x.tgz"
    assert absolute_spec("file:/abs/x.tgz", tmp_path) == "file:/abs/x.tgz" and absolute_spec("^1", tmp_path) == "^1"
    assert npm_error(REFUSED).splitlines() == [
        "code ECONNREFUSED", "FetchError: request to http://127.0.0.1:9/nope failed, reason: connect ECONNREFUSED 127.0.0.1:9",
        "If you are behind a proxy, please make sure that the 'proxy' config is set properly."]
    assert npm_error(OUT_OF_SYNC).splitlines()[1:] == [
        "`npm ci` can only install packages when your package.json and package-lock.json are in sync.",
        "Missing: left-pad@1.3.0 from lock file"]


def test_package_json_and_lockfile_are_read(tmp_path):
    (tmp_path / "package.json").write_text(json.dumps({"name": "r", "dependencies": {"lodash": "^4.17.21"},
                                                       "devDependencies": {"tiny": "file:vendor/tiny-1.0.0.tgz"},
                                                       "optionalDependencies": {"fsevents": "^2"}}))
    assert find_node_requirements(tmp_path) == (["lodash@^4.17.21", f"tiny@file:{tmp_path}/vendor/tiny-1.0.0.tgz"], None, "")
    lock = {"lockfileVersion": 3, "packages": {"": {"devDependencies": {"tiny": "file:vendor/tiny-1.0.0.tgz"}},
                                               "node_modules/tiny": {"version": "1.0.0", "resolved": "file:vendor/tiny-1.0.0.tgz"},
                                               "node_modules/lodash": {"version": "4.17.21",
                                                                       "resolved": "https://registry.npmjs.org/lodash.tgz"}}}
    (tmp_path / "package-lock.json").write_text(json.dumps(lock))
    reqs, text, where = find_node_requirements(tmp_path)
    packages = json.loads(text)["packages"]
    assert where == "package-lock.json" and packages["node_modules/tiny"]["resolved"] == f"file:{tmp_path}/vendor/tiny-1.0.0.tgz"
    assert packages["node_modules/lodash"]["resolved"] == "https://registry.npmjs.org/lodash.tgz"
    (tmp_path / "package.json").write_text('{"name": "r", "devDependencies": {}}')
    assert find_node_requirements(tmp_path) == ([], None, "")
    with pytest.raises(ConfigError, match="npm packages of javascript/typescript sources"):
        SourceFilesSource({"path": str(tmp_path), "language": "go", "test_requirements": ["x@1"]}, tmp_path, "go")
    (tmp_path / "package.json").write_text("{not json")
    with pytest.raises(SourceError, match="not valid JSON"):
        find_node_requirements(tmp_path)


def _npm_env(home: Path) -> dict[str, str]:
    home.mkdir(exist_ok=True)
    return {"PATH": TOOLS, "HOME": str(home), "npm_config_userconfig": str(home / "rc"),
            "npm_config_globalconfig": str(home / "grc"), "npm_config_cache": str(home / "cache")}


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    """A ``tinyhelper`` tarball (``npm pack``; its install scripts would write ``PWNED`` here) and a
    repository whose tests require/import it, locked with ``npm install --package-lock-only``."""
    root = tmp_path_factory.mktemp("packed")
    pkg, packs, repo = root / "tinyhelper", root / "packs", root / "repo"
    for d in (pkg, packs, repo / "src", repo / "test"):
        d.mkdir(parents=True)
    (pkg / "package.json").write_text(json.dumps({"name": "tinyhelper", "version": "1.0.0", "main": "index.js", "scripts": {
        hook: f"node -e \"require('fs').writeFileSync('{root}/PWNED', 'x')\"" for hook in ("preinstall", "postinstall", "prepare")}}))
    (pkg / "index.js").write_text("exports.helpValue = () => 42;\n")
    env = _npm_env(root / "npmhome")
    subprocess.run(["npm", "pack", "--ignore-scripts", "--pack-destination", str(packs)], cwd=pkg, env=env, check=True, capture_output=True)
    (repo / "package.json").write_text(json.dumps({"name": "acme", "version": "1.0.0",
                                                   "devDependencies": {"tinyhelper": "file:../packs/tinyhelper-1.0.0.tgz"}}))
    (repo / "src/answer.js").write_text("const { helpValue } = require('tinyhelper');\n\n"
                                        "function answer() {\n  return helpValue() + 1;\n}\n\nmodule.exports = { answer };\n")
    (repo / "src/double.js").write_text("function double(x) {\n  return 2 * x;\n}\n\nmodule.exports = { double };\n")
    (repo / "test/answer.test.js").write_text(
        "const test = require('node:test');\nconst assert = require('assert');\nconst { helpValue } = require('tinyhelper');\n"
        "const { answer } = require('../src/answer');\n\ntest('answer', () => assert.strictEqual(answer(), helpValue() + 1));\n")
    (repo / "test/double.test.mjs").write_text(
        "import test from 'node:test';\nimport assert from 'node:assert';\nimport { helpValue } from 'tinyhelper';\n"
        "import { double } from '../src/double.js';\n\ntest('double', () => assert.strictEqual(double(helpValue()), 84));\n")
    subprocess.run(["npm", "install", "--package-lock-only", "--ignore-scripts", "--offline"], cwd=repo, env=env,
                   check=True, capture_output=True)
    return root


@pytest.fixture()
def jsrepo(packed, tmp_path, monkeypatch):
    """A copy of ``packed`` (tarball, package, locked repository) and a private deps cache."""
    monkeypatch.setenv("TUNELOOP_DEPS_CACHE", str(tmp_path / "cache"))
    for name in ("tinyhelper", "packs", "repo"):
        shutil.copytree(packed / name, tmp_path / name)
    return tmp_path / "repo"


def _read(repo: Path, **options):
    return SourceFilesSource({"path": str(repo), "language": "javascript", **options}, repo.parent, "js").read()


@needs_npm
def test_a_js_suite_that_needs_a_package_validates_and_fails_without_it(jsrepo, packed, monkeypatch):
    home = jsrepo.parent / "userhome"  # the caller's own npm configuration and Node search path must not leak in
    home.mkdir()
    (home / ".npmrc").write_text("dry-run=true\n//registry.npmjs.org/:_authToken=SECRET\n")
    (home / "leaky").mkdir()
    (home / "leaky/index.js").write_text("module.exports = 1;\n")
    for key, value in {"HOME": str(home), "npm_config_dry_run": "true", "NODE_PATH": str(home)}.items():
        monkeypatch.setenv(key, value)
    res = _read(jsrepo)
    tarball = f"file:{jsrepo.parent}/packs/tinyhelper-1.0.0.tgz"
    assert sorted(t.verifier.target_path for t in res.tasks) == ["src/answer.js", "src/double.js"]
    assert {t.verifier.requirements for t in res.tasks} == {(f"tinyhelper@{tarball}",)}
    lock = json.loads(res.tasks[0].verifier.files["package-lock.json"])
    assert lock["packages"]["node_modules/tinyhelper"]["resolved"] == tarball
    env = find_node_env(res.tasks[0].verifier.requirements, res.tasks[0].verifier.files["package-lock.json"])
    main = env / "node_modules/tinyhelper/index.js"
    assert main.is_file() and not main.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    assert not (packed / "PWNED").exists()  # no lifecycle script ran on the host
    box = make_sandbox(SandboxConfig(allow_unisolated=True, concurrency=2, cache=False))
    try:
        valid, bad = validate_tasks(res.tasks, box)
        bare = [request_for(t, t.reference).model_copy(update={"requirements": ()}) for t in res.tasks]
        probe = {"test/probe.test.js": "const test = require('node:test');\n"
                 "test('helper', () => { require('tinyhelper'); });\ntest('leak', () => { require('leaky'); });\n"}
        with_env = request_for(res.tasks[0], res.tasks[0].reference).model_copy(update={"tests": probe})
        results = box.run([*bare, with_env, with_env.model_copy(update={"requirements": ()})])
    finally:
        box.close()
    assert [q.reason for q in bad] == [] and len(valid) == 2
    assert [r.status.value for r in results[:2]] == ["failed", "failed"]  # the references fail without the env
    outcome = [{t.name: (t.outcome, t.message) for t in r.tests} for r in results[2:]]
    assert outcome[0]["helper"][0] == "passed" and "Cannot find module 'leaky'" in outcome[0]["leak"][1]
    assert "Cannot find module 'tinyhelper'" in outcome[1]["helper"][1]


@needs_npm
def test_the_environment_is_built_once_and_can_be_switched_off(jsrepo):
    first = _read(jsrepo).tasks[0].verifier
    (jsrepo.parent / "packs").rename(jsrepo.parent / "gone")  # a second install would fail now
    again = _read(jsrepo).tasks[0].verifier
    assert again.requirements == first.requirements
    assert find_node_env(again.requirements, again.files["package-lock.json"]) is not None
    off = _read(jsrepo, test_requirements=[]).tasks[0].verifier
    assert off.requirements == () and "package-lock.json" not in off.files


@needs_npm
def test_an_unreachable_registry_is_one_clear_error_before_any_task(jsrepo):
    with socket.socket() as s:  # a local port with nobody listening: connection refused, no network needed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(SourceError) as err:
        _read(jsrepo, test_requirements=["no-such-helper-xyz@^1.0.0"],
              npm_args=["--registry", f"http://127.0.0.1:{port}/", "--fetch-retries=0"])
    what, fix = err.value.what, err.value.fix
    assert "test_requirements" in what and "no-such-helper-xyz" in what and "ECONNREFUSED" in what
    assert "at ClientRequest" not in what and "--registry" in fix and "--offline" in fix and "test_requirements: []" in fix
    with pytest.raises(SourceError, match="ENOTCACHED") as err:  # an offline cache that lacks the package
        _read(jsrepo, test_requirements=["no-such-helper-xyz@^1.0.0"], npm_args=["--offline", "--cache", str(jsrepo / "c")])
    assert "no-such-helper-xyz" in err.value.what
    manifest = json.loads((jsrepo / "package.json").read_text())
    (jsrepo / "package.json").write_text(json.dumps({**manifest, "dependencies": {"left-pad": "1.3.0"}}))
    with pytest.raises(SourceError, match="left-pad") as err:  # lockfile out of sync (offline: npm looks left-pad up first)
        _read(jsrepo, npm_args=["--offline", "--cache", str(jsrepo / "c")])
    assert "npm ci" in err.value.what and "npm install --package-lock-only" in err.value.fix
    assert not list((jsrepo.parent / "cache").glob("node-*/.complete"))  # nothing half-built is kept
    assert not [p for p in (jsrepo.parent / "cache").glob(".build-*")]


@needs_npm
def test_a_file_folder_dependency_is_copied_not_linked(jsrepo, packed):
    manifest = json.loads((jsrepo / "package.json").read_text())
    manifest["devDependencies"] = {"tinyhelper": "file:../tinyhelper"}
    (jsrepo / "package.json").write_text(json.dumps(manifest))
    subprocess.run(["npm", "install", "--package-lock-only", "--ignore-scripts", "--offline"], cwd=jsrepo,
                   env=_npm_env(jsrepo.parent / "npmhome"), check=True, capture_output=True)
    assert '"link": true' in (jsrepo / "package-lock.json").read_text()  # npm's lock of a folder: not usable elsewhere
    res = _read(jsrepo)
    v = res.tasks[0].verifier
    assert v.requirements == (f"tinyhelper@file:{jsrepo.parent}/tinyhelper",) and "package-lock.json" not in v.files
    copied = find_node_env(v.requirements) / "node_modules/tinyhelper"
    assert copied.is_dir() and not copied.is_symlink() and not (packed / "PWNED").exists()
    box = make_sandbox(SandboxConfig(allow_unisolated=True, concurrency=2, cache=False))
    try:
        valid, bad = validate_tasks(res.tasks, box)
    finally:
        box.close()
    assert [q.reason for q in bad] == [] and len(valid) == 2


@needs_npm
def test_a_solution_cannot_plant_a_package_the_tests_require_later(jsrepo):
    """A CommonJS test that requires its helper after the solution: the solution replaces
    ``node_modules`` in the writable build folder with a fake helper; the tests still get the real one."""
    res = _read(jsrepo)
    task = next(t for t in res.tasks if t.verifier.target_path == "src/answer.js")
    plant = ("const fs = require('fs');\nconst path = require('path');\nconst nm = path.join(__dirname, '..', 'node_modules');\n"
             "try { fs.unlinkSync(nm); } catch (e) {}\nfs.mkdirSync(path.join(nm, 'tinyhelper'), { recursive: true });\n"
             "fs.writeFileSync(path.join(nm, 'tinyhelper', 'index.js'), 'exports.helpValue = () => -1;');\n"
             "function answer() {\n  return 0;\n}\n\nmodule.exports = { answer };\n")
    late = {"test/late.test.js": "const test = require('node:test');\nconst assert = require('assert');\n"
            "const { answer } = require('../src/answer');\nconst { helpValue } = require('tinyhelper');\n\n"
            "test('late', () => assert.strictEqual(answer(), helpValue() + 1));\n"}
    box = make_sandbox(SandboxConfig(allow_unisolated=True, concurrency=1, cache=False))
    try:
        honest, planted = box.run([request_for(task, task.reference).model_copy(update={"tests": late}),
                                   request_for(task, plant).model_copy(update={"tests": late})])
    finally:
        box.close()
    assert honest.all_passed
    assert not planted.all_passed


@needs_npm
def test_a_solution_cannot_plant_a_package_a_test_imports_dynamically(jsrepo):
    """The ESM route: a test calls ``import('tinyhelper')`` after the solution replaced ``node_modules``
    in the build folder; the guard's resolve hook re-resolves it from the environment. A resolve hook of
    the solution's own (``module.register``, which would run before ours) is refused."""
    res = _read(jsrepo)
    task = next(t for t in res.tasks if t.verifier.target_path == "src/double.js")
    plant = ("const fs = require('fs');\nconst path = require('path');\nconst nm = path.join(__dirname, '..', 'node_modules');\n"
             "try { fs.unlinkSync(nm); } catch (e) {}\nfs.mkdirSync(path.join(nm, 'tinyhelper'), { recursive: true });\n"
             "fs.writeFileSync(path.join(nm, 'tinyhelper', 'index.js'), 'exports.helpValue = () => 0;');\n"
             "function double(x) {\n  return 0;\n}\n\nmodule.exports = { double };\n")
    fake = "data:text/javascript,export const helpValue = () => 0;"
    hook = ("const fake = " + json.dumps(fake) + ";\nconst code = 'export async function resolve(s, c, n) { '"
            " + 'return s === \"tinyhelper\" ? { url: ' + JSON.stringify(fake) + ', shortCircuit: true } : n(s, c); }';\n"
            "try { require('module').register('data:text/javascript,' + encodeURIComponent(code)); } catch (e) {}\n"
            "function double(x) {\n  return 0;\n}\n\nmodule.exports = { double };\n")
    late = {"test/late.test.mjs": "import test from 'node:test';\nimport assert from 'node:assert';\n"
            "import { double } from '../src/double.js';\n\ntest('late', async () => {\n  const v = double(21);\n"
            "  const { helpValue } = await import('tinyhelper');\n  assert.strictEqual(v, helpValue() === 42 ? 42 : 0);\n});\n"}
    box = make_sandbox(SandboxConfig(allow_unisolated=True, concurrency=1, cache=False))
    try:
        honest, planted, hooked = box.run([request_for(task, task.reference).model_copy(update={"tests": late}),
                                           request_for(task, plant).model_copy(update={"tests": late}),
                                           request_for(task, hook).model_copy(update={"tests": late})])
    finally:
        box.close()
    assert honest.all_passed
    assert not planted.all_passed, planted.tests
    assert not hooked.all_passed, hooked.tests
