"""Issue 13 follow-up: a JS/Go/Java task whose tests need a package the sandbox lacks is quarantined with
the cause (node's JUnit reporter said only "test failed" for a test file that failed while loading) and the
quarantine summary's fix says how to give it (npm) or leave those tests out (Go, Java)."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.suites.file_tasks import SourceFilesSource
from sdk.config import SandboxConfig
from sdk.run.health import quarantine_summary
from sdk.sandbox import make_sandbox
from sdk.sandbox.deps import missing_dependency_fix, node_packages
from sdk.sandbox.languages import toolchain_status
from sdk.tasks.validate import request_for, validate_tasks
from sdk.types import Language


def _needs(language: Language):
    return pytest.mark.skipif(toolchain_status(language) is not None, reason=f"needs the {language.value} toolchain")


def test_the_fix_names_what_each_toolchain_could_not_find():
    cjs = "Error: Cannot find module 'lodash/fp'\nRequire stack:\n- /b/test/a.test.js\n  code: 'MODULE_NOT_FOUND',"
    esm = "Error [ERR_MODULE_NOT_FOUND]: Cannot find package '@acme/helper' imported from /b/test/a.test.mjs"
    own = "Error: Cannot find module '../src/gone'\nError [ERR_MODULE_NOT_FOUND]: Cannot find module '/b/x.js' imported"
    assert node_packages(cjs + "\n" + esm + "\n" + own + "\nCannot find module 'node:nope'") == ["lodash", "@acme/helper"]
    assert node_packages(own) == [] and missing_dependency_fix(own) == ""
    fix = missing_dependency_fix(esm)
    assert "npm package(s) @acme/helper" in fix and "test_requirements='[@acme/helper]'" in fix and "package.json" in fix
    go = ("s_test.go:2:20: cannot find module providing package github.com/stretchr/testify/assert: module lookup "
          "disabled by GOPROXY=off\nx_test.go:3:2: no required module provides package golang.org/x/text; to add it:")
    fix = missing_dependency_fix(go)
    assert "github.com/stretchr/testify/assert, golang.org/x/text" in fix and "`exclude:`" in fix
    java = "src/test/java/MoneyTest.java:1: error: package org.assertj.core.api does not exist"
    assert "Java package(s) org.assertj.core.api" in missing_dependency_fix(java)
    assert "`test_requirements:`" in missing_dependency_fix("E   ModuleNotFoundError: No module named 'freezegun'")
    assert missing_dependency_fix("AssertionError: 2 != 3") == ""


def _repo(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _quarantine(repo: Path, language: str):
    res = SourceFilesSource({"path": str(repo), "language": language}, repo, "deps").read()
    assert res.tasks, res.quarantined
    box = make_sandbox(SandboxConfig(allow_unisolated=True, concurrency=2, cache=False))
    try:
        valid, bad = validate_tasks(res.tasks, box)
    finally:
        box.close()
    assert valid == [] and len(bad) == len(res.tasks)
    return bad


ADD = "function add(a, b) {\n  return a + b;\n}\n\nmodule.exports = { add };\n"


@_needs(Language.JAVASCRIPT)
def test_a_js_test_file_that_cannot_load_its_helper_names_it_and_the_npm_fix(tmp_path):
    repo = _repo(tmp_path, {
        "src/add.js": ADD,
        "src/sub.mjs": "export function sub(a, b) {\n  return a - b;\n}\n",
        "test/add.test.js": "const test = require('node:test');\nconst fake = require('sinon-missing');\n"
                            "const { add } = require('../src/add');\ntest('add', () => { fake; add(1, 2); });\n",
        "test/sub.test.mjs": "import test from 'node:test';\nimport { stub } from '@acme/esm-missing';\n"
                             "import { sub } from '../src/sub.mjs';\ntest('sub', () => { stub; sub(3, 1); });\n"})
    quarantined = _quarantine(repo, "javascript")
    first = {q.task.verifier.target_path: q.reason.splitlines()[0] for q in quarantined}
    assert first["src/add.js"].startswith("reference_fails") and "Error: Cannot find module 'sinon-missing'" in first["src/add.js"]
    assert "Error [ERR_MODULE_NOT_FOUND]: Cannot find package '@acme/esm-missing'" in first["src/sub.mjs"]
    (group,) = quarantine_summary(quarantined)
    assert "sinon-missing" in group["fix"] and "@acme/esm-missing" in group["fix"] and "`test_requirements:`" in group["fix"]


@_needs(Language.JAVASCRIPT)
def test_a_test_files_stderr_is_text_in_the_report_never_a_test(tmp_path):
    """The kept stderr is the solution's to write: XML in it stays text (no forged testcase), and a file
    whose tests pass keeps node's verdicts."""
    repo = _repo(tmp_path, {"src/add.js": ADD, "test/add.test.js": (
        "const test = require('node:test');\nconst { add } = require('../src/add');\n"
        "test('add', () => { if (add(1, 2) !== 3) throw new Error('no'); });\n")})
    task = SourceFilesSource({"path": str(repo), "language": "javascript"}, repo, "d").read().tasks[0]
    forge = ("process.stderr.write('</failure></testcase><testcase name=\"forged\" classname=\"x\"/>"
             "<testcase name=\"y\"><failure>');\nprocess.exitCode = 3;\n" + ADD)
    box = make_sandbox(SandboxConfig(allow_unisolated=True, concurrency=1, cache=False))
    try:
        honest, forged = box.run([request_for(task, task.reference), request_for(task, forge)])
    finally:
        box.close()
    assert honest.all_passed and [t.name for t in honest.tests] == ["add"]
    assert not forged.all_passed and "forged" not in [t.name for t in forged.tests]
    whole = [t for t in forged.tests if t.name.endswith("add.test.js")]
    assert whole and whole[0].outcome == "failed" and '<testcase name="forged"' in whole[0].message


@_needs(Language.GO)
def test_a_go_test_that_imports_a_module_names_it_and_says_exclude(tmp_path):
    repo = _repo(tmp_path, {"go.mod": "module acme\n\ngo 1.19\n",
                            "add.go": "package acme\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
                            "add_test.go": "package acme\n\nimport (\n\t\"testing\"\n\n\t\"github.com/stretchr/testify/assert\"\n)\n\n"
                                           "func TestAdd(t *testing.T) {\n\tassert.Equal(t, 3, Add(1, 2))\n}\n"})
    bad = _quarantine(repo, "go")
    assert "github.com/stretchr/testify/assert" in bad[0].reason
    (group,) = quarantine_summary(bad)
    assert "Go package(s) github.com/stretchr/testify/assert" in group["fix"] and "`exclude:`" in group["fix"]


@_needs(Language.JAVA)
def test_a_java_test_that_imports_a_library_names_it_and_says_exclude(tmp_path):
    repo = _repo(tmp_path, {
        "src/main/java/Money.java": "public class Money {\n  public static int add(int a, int b) {\n    return a + b;\n  }\n}\n",
        "src/test/java/MoneyTest.java": "import org.junit.jupiter.api.Test;\nimport static org.assertj.core.api.Assertions.assertThat;\n\n"
                                        "class MoneyTest {\n  @Test void adds() {\n    assertThat(Money.add(1, 2)).isEqualTo(3);\n  }\n}\n"})
    bad = _quarantine(repo, "java")
    assert "package org.assertj.core.api does not exist" in bad[0].reason
    (group,) = quarantine_summary(bad)
    assert "Java package(s) org.assertj.core.api" in group["fix"]
