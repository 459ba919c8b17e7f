"""Other languages (issue 4 part 4): JS, Java and Go fixture repositories → file tasks."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.suites.file_tasks import SourceFilesSource, stub_bodies
from sdk.config import SandboxConfig
from sdk.errors import SourceError
from sdk.sandbox.contract import ExecRequest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REPOS = {"javascript": "jsrepo", "java": "javarepo", "go": "gorepo"}


def _read(language: str, path: Path | None = None):
    return SourceFilesSource({"path": str(path or FIXTURES / REPOS[language]), "language": language}, FIXTURES, "poly").read()


def test_stub_bodies_skips_strings_comments_and_control_blocks():
    js = ('const o = { a: 1 };\n// function fake() {\nfunction f(x) {\n  if (x) { return "}"; }\n  return `{${x}}`;\n}\n'
          'class C {\n  m(a) { return a; }\n}\nconst g = (y) => { return y; };\n')
    out = stub_bodies(js, "javascript")
    assert out == ('const o = { a: 1 };\n// function fake() {\nfunction f(x) { throw new Error("not implemented"); }\n'
                   'class C {\n  m(a) { throw new Error("not implemented"); }\n}\n'
                   'const g = (y) => { throw new Error("not implemented"); };\n')
    java = ('class A {\n  Runnable r = new Runnable() { public void run() {} };\n  @Override public String toString() {'
            ' return "{"; }\n  int f(char c) throws Exception { return c == \'{\' ? 1 : 0; }\n}\n')
    out = stub_bodies(java, "java")
    assert "return \"{\"" not in out and "c == '{'" not in out and out.count("UnsupportedOperationException") == 3
    ts = "export function add(a: number, b: number): number {\n  return a + b;\n}\n"
    assert stub_bodies(ts, "typescript") == 'export function add(a: number, b: number): number { throw new Error("not implemented"); }\n'


@pytest.mark.parametrize("language,target,test", [
    ("javascript", "src/slug.js", "test/slug.test.js"),
    ("java", "src/main/java/Money.java", "src/test/java/MoneyTest.java"),
    ("go", "strutil.go", "strutil_test.go"),
])
def test_fixture_repos_pair_sources_and_tests(language, target, test):
    res = _read(language)
    assert [t.verifier.target_path for t in res.tasks] == [target]
    task = res.tasks[0]
    assert list(task.verifier.tests) == [test] and target not in task.verifier.files
    assert task.reference == (FIXTURES / REPOS[language] / target).read_text()
    assert "not implemented" in task.prompt[0].content and task.metadata["skeleton"] in task.prompt[0].content
    assert _read(language).tasks[0].id == task.id


def test_a_config_names_the_source_type_files():
    """`type: files` is the registered name (not only the dotted path); the module name gets a did-you-mean."""
    from sdk.config import parse_config
    from sdk.errors import ConfigError
    from sdk.sources import resolve_source

    cfg = parse_config({"sources": [{"type": "files", "domain": "poly",
                                     "options": {"path": str(FIXTURES / "gorepo"), "language": "go"}}]})
    src = cfg.sources[0]
    assert resolve_source(src.type) is SourceFilesSource
    res = resolve_source(src.type)(src.options, FIXTURES, src.domain).read()
    assert [t.verifier.target_path for t in res.tasks] == ["strutil.go"]
    with pytest.raises(ConfigError, match="did you mean 'files'"):
        resolve_source("file_tasks")


def test_unpaired_and_empty_repos(tmp_path):
    (tmp_path / "orphan.test.js").write_text("require('node:test')('x', () => {});\n")
    res = _read("javascript", tmp_path)
    assert not res.tasks and res.quarantined[0].reason.startswith("no source file for test orphan.test.js")
    with pytest.raises(SourceError, match="no go test files"):
        _read("go", tmp_path)


@pytest.fixture(scope="module")
def sandbox():
    from sdk.sandbox import make_sandbox

    box = make_sandbox(SandboxConfig(allow_unisolated=True, concurrency=2, cache=False))
    yield box
    box.close()


def test_file_tasks_validate_in_the_sandbox(sandbox):
    from sdk.sandbox import toolchain_status

    reqs, expect = [], []
    for language in REPOS:
        task = _read(language).tasks[0]
        v = task.verifier
        if toolchain_status(v.language):
            continue  # field case S3: a missing toolchain is not this connector's verdict
        for solution, ok in ((task.reference, True), (task.metadata["skeleton"], False)):
            reqs.append(ExecRequest(language=v.language, framework=v.framework, solution=solution, tests=v.tests,
                                    files=v.files, target_path=v.target_path))
            expect.append((language, ok))
    if not reqs:
        pytest.skip("no JS, Java or Go toolchain here")
    results = sandbox.run(reqs)
    assert [(lang, r.all_passed) for (lang, _), r in zip(expect, results)] == expect
