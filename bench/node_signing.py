"""What signing node's verdicts costs per run (issue 14, round 8: ``tl_node_guard.cjs``'s ``signVerdicts``).

One process, A/B interleaved: each round runs the same CommonJS test file (``--tests`` tests of a correct
``add``) through ``_runner/tl_offdisk.run_each`` twice, as the sandbox's build driver does but without the
sandbox around it: (A) the key and the record pipe withheld (the guard reads the source only and signs
nothing, as before the change), (B) with them (every test's function wrapped, its caller's script hash
checked, an HMAC-SHA256 per result in plain JS; the driver then checks the MACs). Prints the median wall
and CPU milliseconds (the node processes') of each side over ``--rounds`` rounds and B / A; every B run must sign every test.

    nice -n 10 .venv/bin/python bench/node_signing.py [--rounds 15] [--tests 20] [--before REV] [--helper]

``--before REV``: (A) is the guard of git revision REV, signing too (before/after a guard change, one
process); ``--helper``: the test file only calls ``tests/helpers.js``, which registers the tests;
``--dynamic``: the test file's text names ``import(`` (a comment), so the guard registers its resolve hook
for ``import('node:test')`` (ESM's hooks thread); with ``--before`` that says what the hook costs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ROOT / "sdk" / "sandbox" / "_runner"
LANG = ROOT / "sdk" / "sandbox" / "languages"


def _one(offdisk, spec: dict, source: str, signed: bool) -> tuple[float, float, int]:
    """(wall ms, children's CPU ms, signed records) of one ``run_each`` of ``add.test.js``; (A) without
    key and records (with ``--before``: signed by the guard of that revision, ``spec["before"]``)."""
    if not signed and spec.get("before"):
        spec, signed = dict(spec, run=spec["before"]), True
    def feed(fd, data):
        os.write(fd, data if signed else data[32:])   # (A): the source alone, as the old protocol sent it
        os.close(fd)
    env = dict(os.environ)
    if not signed:   # (A): run_each still passes TL_REC_FD; a guard without it in the env signs nothing
        spec = dict(spec, run=["env", "-u", "TL_REC_FD", *spec["run"]])
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    out = offdisk.run_each(spec, env, {"add.test.js": source}, feed)
    ms, c1 = (time.perf_counter() - t0) * 1000, resource.getrusage(resource.RUSAGE_CHILDREN)
    if out is None or out[1] != 0:
        raise SystemExit(f"run failed: {out!r:.300}")
    return ms, (c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime) * 1000, len(out[2])


def main() -> None:
    """Run the A/B rounds in a scratch folder and print the medians and their ratio."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--tests", type=int, default=20)
    ap.add_argument("--before", help="git revision: (A) is that revision's guard, signed, not an unsigned run")
    ap.add_argument("--helper", action="store_true", help="the tests registered by tests/helpers.js (issue 14, D2)")
    ap.add_argument("--dynamic", action="store_true", help="the test file's text has import( (the resolve hook)")
    args = ap.parse_args()
    sys.path.insert(0, str(RUNNER))
    import tl_offdisk  # noqa: PLC0415 - a sandbox-side module, stdlib only
    node = shutil.which("node")
    if not node:
        raise SystemExit("no node here")
    source = "const test = require('node:test');\nconst assert = require('node:assert');\nconst add = require('./add');\n" + "".join(
        f"test('t{i}', () => assert.strictEqual(add({i}, 1), {i + 1}));\n" for i in range(args.tests))
    helper = ("const test = require('node:test');\nconst assert = require('node:assert');\nmodule.exports = (add, n) => {\n"
              "  for (let i = 0; i < n; i++) test('t' + i, () => assert.strictEqual(add(i, 1), i + 1));\n};\n")
    if args.helper:
        source = f"require('./tests/helpers.js')(require('./add'), {args.tests});\n"
    if args.dynamic:
        source = "// no import( call here: the text alone registers the guard's resolve hook\n" + source
    old = subprocess.run(["git", "-C", str(ROOT), "show", f"{args.before}:sdk/sandbox/languages/tl_node_guard.cjs"],
                         capture_output=True, text=True, check=True).stdout if args.before else None
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        os.mkdir("tests")
        Path("tests/helpers.js").write_text(helper)
        os.environ["TL_NODE_TRUST"] = json.dumps({"tests/helpers.js": hashlib.sha256(helper.encode()).hexdigest()})
        shutil.copy(LANG / "tl_node_guard.cjs", ".g.cjs")
        if old is not None:
            Path(".g0.cjs").write_text(old)
        shutil.copy(LANG / "tl_node_report.cjs", ".r.cjs")
        Path("add.js").write_text("module.exports = (a, b) => a + b;\n")
        Path("add.test.js").write_text("// decoy\n")
        spec = {"run": [node, "--require", f"{tmp}/.g.cjs", "--test", f"--test-reporter={tmp}/.r.cjs",
                        "--test-reporter-destination=stdout"], "run_timeout": 60}
        if old is not None:
            spec["before"] = [node, "--require", f"{tmp}/.g0.cjs", *spec["run"][3:]]
        a, b, ca, cb = [], [], [], []
        for r in range(args.rounds):
            for signed in ((False, True) if r % 2 == 0 else (True, False)):   # order alternates: drift cancels
                ms, cpu, recs = _one(tl_offdisk, spec, source, signed)
                if (signed or args.before) and recs != args.tests:
                    raise SystemExit(f"signed {recs} of {args.tests} tests")
                (b if signed else a).append(ms)
                (cb if signed else ca).append(cpu)
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"node run of {args.tests} tests, {args.rounds} rounds, load {os.getloadavg()[0]:.2f}")
    print(f"  (A) {'guard at ' + args.before if args.before else 'unsigned'}: median {ma:.1f} ms [{min(a):.1f}-{max(a):.1f}]")
    print(f"  (B) signed:   median {mb:.1f} ms [{min(b):.1f}-{max(b):.1f}]")
    print(f"  B / A = {mb / ma:.3f} (+{mb - ma:.1f} ms per run)")
    pa, pb = statistics.median(ca), statistics.median(cb)
    print(f"  CPU (node, children): A {pa:.1f} ms, B {pb:.1f} ms, B / A = {pb / pa:.3f} (+{pb - pa:.1f} ms)")


if __name__ == "__main__":
    main()
