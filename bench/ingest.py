"""Benchmark: SQL feedback rows → training records, against ``pandas.read_sql`` (issue 5).

Usage::

    .venv/bin/python bench/ingest.py [--rows 1000000] [--url postgresql+psycopg2://postgres@127.0.0.1:5432/test]

Creates a table of the quickstart's ``chat_feedback`` shape with ``--rows`` deterministic rows
(5% double clicks, 20% NULL ratings, 15% corrections, mixed time-zone offsets, 2% of prompts
with personal data) in the database via ``COPY``, then runs, each in a fresh process:

- ``tuneloop``: :class:`SqlFeedbackSource` with ``ingest: fast`` (ADBC Arrow batches, columnar
  redaction pre-filter, a worker process per core): dedup, value parsing, PII redaction and
  record building, the JSON lines written to a file as the workers made them (``iter_jsonl_blocks``);
- ``tuneloop-rows`` (with ``--rows-path``): the same with ``ingest: rows`` (server-side cursor,
  row by row); the two outputs are compared by SHA-256 and must be identical;
- ``tuneloop-ray`` (with ``--ray``): the same with ``ingest: ray`` (key-range shards on a local Ray
  cluster); compared by SHA-256 too;
- ``pandas``: ``pandas.read_sql`` of the same table into a DataFrame (loading only: no dedup,
  no redaction, no records; the baseline is favourable to pandas).

Prints rows/s, CPU seconds (the reader's process and its workers; the database server's, read
from ``/proc`` for the local ``postgres`` processes, separately) and peak RSS of each, and the ratios (target: >= 2x the rows/s at <= 1/4 of the
peak memory). Peak memory is sampled every 100 ms by this (the harness) process over the reader's
whole process tree (the reader and its worker processes, PSS summed, so pages that forked workers
share count once), not ``ru_maxrss``: that one inherits the parent's peak across ``fork``/``exec``
and counts no workers. The sampler runs outside the timed process, and at 100 ms rather than 20 ms:
reading ``smaps_rollup`` cost 2-8 ms of CPU per sample, which on 2 cores took a share of a core
from a reader that uses both (pandas' reader uses one, so the sampler ran on the idle core).
Imports are not timed for either reader (pandas and SQLAlchemy for pandas; the fast path's
modules, pyarrow.compute and, through it, pandas for tuneloop); tuneloop's output SHA-256 is
computed from the written file after the timed region (pandas writes nothing). The table is
dropped at the end. Needs pandas (bench-only dependency).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OFFSETS = ["+00:00", "-03:00", "Z", "", "+05:30"]
PROMPTS = ["write a helper that returns the balance of account {n} as Money",
           "why does transfer {n} fail with INSUFFICIENT_FUNDS?",
           "how do I round {n} cents to the nearest dollar with the ledger API?"]
PII = "reach me at jane.roe{n}@example.com or +44 20 7946 {n4}"


def _rows(n: int, seed: int = 7):
    rnd = random.Random(seed)
    i = 0
    while i < n:
        conv, mid, user = f"c{i // 4}", f"m{i}", f"u{rnd.randrange(5000)}"
        prompt = rnd.choice(PROMPTS).format(n=i) + (" " + PII.format(n=i, n4=f"{i % 10000:04d}") if rnd.random() < 0.02 else "")
        response = f"def helper_{i}(account):\n    return ok(Money(account.cents))"
        rating = rnd.choice(["1", "-1", "1", "1", ""]) if rnd.random() > 0.2 else ""
        correction = f"def helper_{i}(account):\n    return ok(account.balance())" if rnd.random() < 0.15 else ""
        clicks = 2 if rnd.random() < 0.05 else 1
        for c in range(min(clicks, n - i)):
            stamp = f"2026-03-01T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}.{c:03d}{rnd.choice(OFFSETS)}"
            meta = json.dumps({"model": "acme-coder", "details": {"rating": rnd.randrange(11)}})
            yield (conv, mid, user, stamp, "ledger-assistant", prompt, response, rating, correction, meta)
            i += 1


def setup(url: str, n: int) -> str:
    """Create and fill the table; returns its name."""
    import sqlalchemy as sa

    table = f"bench_feedback_{uuid.uuid4().hex[:10]}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(f"CREATE TABLE {table} (id BIGSERIAL PRIMARY KEY, conversation_id TEXT, message_id TEXT, "
                             "user_id TEXT, created_at TEXT, app TEXT, prompt TEXT, response TEXT, rating INTEGER NULL, "
                             "correction TEXT NULL, meta TEXT)"))
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        buf = io.StringIO()
        for k, row in enumerate(_rows(n)):
            buf.write("\t".join(v.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t") if v else "\\N"
                                for v in row) + "\n")
            if k % 100_000 == 99_999:
                buf.seek(0)
                cur.copy_expert(f"COPY {table} (conversation_id, message_id, user_id, created_at, app, prompt, "
                                "response, rating, correction, meta) FROM STDIN", buf)
                buf = io.StringIO()
        buf.seek(0)
        cur.copy_expert(f"COPY {table} (conversation_id, message_id, user_id, created_at, app, prompt, response, "
                        "rating, correction, meta) FROM STDIN", buf)
        cur.execute(f"CREATE INDEX ON {table} (message_id, user_id)")
        cur.execute(f"ANALYZE {table}")
        raw.commit()
    finally:
        raw.close()
    engine.dispose()
    return table


def _tree_rss_mb(pid: int | None = None) -> float:
    """Proportional set size (PSS: shared pages split between the processes sharing them) of process
    ``pid`` (default: this one) plus all its descendants, in MB."""
    pid = pid or os.getpid()
    total = 0.0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                total += int(line.split()[1]) / 1024
        for task in Path(f"/proc/{pid}/task").iterdir():
            for kid in (task / "children").read_text().split():
                total += _tree_rss_mb(int(kid))
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return total


class _Peak:
    """Samples :func:`_tree_rss_mb` of process ``pid`` every 100 ms in a thread; ``peak`` is the
    highest seen."""

    def __init__(self, pid: int) -> None:
        import threading

        self.pid = pid
        self.peak, self._stop = _tree_rss_mb(pid), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.peak = max(self.peak, _tree_rss_mb(self.pid))

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return max(self.peak, _tree_rss_mb(self.pid))


def _server_cpu_s() -> float:
    """CPU seconds of the local PostgreSQL server so far: every ``postgres`` process's own and its
    reaped children's (the backends of finished connections). Other clients of the same server
    (a shared machine) are counted too."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0.0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if stat[stat.index("(") + 1:stat.rindex(")")].startswith("postgres"):
            fields = stat[stat.rindex(")") + 2:].split()
            total += sum(int(f) for f in fields[11:15]) / tick
    return total


def _cpu_s() -> float:
    """User + system CPU seconds of this process and its reaped children (the worker processes)."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def child(mode: str, url: str, table: str, redact: bool = True, ingest: str = "fast") -> dict:
    """Run one reader in this process; returns rows, seconds, CPU seconds (this process and its
    workers, timed region only) and RSS after imports (the harness samples the peak)."""
    if mode == "tuneloop":
        import hashlib
        import warnings

        from connectors.feedback_tables import fast, lane  # noqa: F401 - imported untimed, like pandas below
        from connectors.feedback_tables.source import SqlFeedbackSource
        if ingest == "ray":  # the cluster's start is not timed (like imports)
            os.environ.setdefault("RAY_AUTH_MODE", "disabled")
            import ray
            ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
        base = _tree_rss_mb()
        source = SqlFeedbackSource({"url": url, "table": table, "timezone": "UTC", "batch_size": 5000,
                                    "redact": redact, "ingest": ingest}, ROOT, "feedback/bench")
        start, cpu = time.perf_counter(), _cpu_s()
        with tempfile.TemporaryFile("w+", encoding="utf-8") as out, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for block in source.iter_jsonl_blocks():  # whole lines, each ending in a newline
                out.write(block)
            out.flush()
            seconds, cpu = time.perf_counter() - start, _cpu_s() - cpu
            out.seek(0)
            digest = hashlib.file_digest(out.buffer, "sha256")  # the file's bytes, hashed untimed
        return {"rows": source.counts["rows_read"], "seconds": seconds, "cpu_s": cpu, "base_rss_mb": base,
                "counts": source.counts, "sha256": digest.hexdigest()}
    import pandas as pd
    import sqlalchemy as sa
    engine = sa.create_engine(url)
    base = _tree_rss_mb()
    start, cpu = time.perf_counter(), _cpu_s()
    frame = pd.read_sql(f"SELECT * FROM {table}", engine)
    seconds, cpu = time.perf_counter() - start, _cpu_s() - cpu
    return {"rows": len(frame), "seconds": seconds, "cpu_s": cpu, "base_rss_mb": base}


def _run_reader(mode: str, extra: list[str], url: str, table: str) -> dict:
    """One reader in a fresh process: its child's result plus the server's CPU seconds over its run
    and the peak memory of its process tree."""
    cmd = [sys.executable, __file__, "--child", mode.split("-")[0], "--url", url, "--table", table, *extra]
    server = _server_cpu_s()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    peak = _Peak(proc.pid)  # the reader's whole life; its peak is in the timed region
    stdout, stderr = proc.communicate()
    if proc.returncode:
        raise SystemExit(f"{mode} failed:\n{stderr[-4000:]}")
    return {**json.loads(stdout.strip().splitlines()[-1]), "server_cpu_s": _server_cpu_s() - server,
            "peak_rss_mb": peak.stop()}


def main() -> None:
    """Parse arguments, set up the table, run both readers in fresh processes, print ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--url", default="postgresql+psycopg2://postgres@127.0.0.1:5432/test")
    ap.add_argument("--child", choices=["tuneloop", "pandas"])
    ap.add_argument("--table")
    ap.add_argument("--no-redact", action="store_true", help="also time tuneloop without PII redaction")
    ap.add_argument("--rows-path", action="store_true", help="also time the row-by-row path and compare outputs")
    ap.add_argument("--ray", action="store_true", help="also time `ingest: ray` on a local Ray cluster (one CPU per "
                    "core; its start not timed; its workers are outside the measured process tree) and compare outputs")
    ap.add_argument("--repeat", type=int, default=1, help="run each reader N times, alternating (each run printed), "
                    "keep the fastest for the ratios")
    ap.add_argument("--ingest", default="fast", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.url, args.table, redact=not args.no_redact, ingest=args.ingest)))
        return
    import sqlalchemy as sa

    t0 = time.perf_counter()
    table = setup(args.url, args.rows)
    print(f"table {table}: {args.rows} rows loaded in {time.perf_counter() - t0:.1f} s; {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f} (the ratios are only meaningful on a quiet machine)")
    results = {}
    try:
        runs = [("pandas", []), ("tuneloop", [])] + ([("tuneloop-rows", ["--ingest", "rows"])] if args.rows_path else []) \
            + ([("tuneloop-noredact", ["--no-redact"])] if args.no_redact else []) \
            + ([("tuneloop-ray", ["--ingest", "ray"])] if args.ray else [])
        for k in range(args.repeat):  # alternating, so a burst of load on a shared machine hits both
            for mode, extra in runs:
                r = _run_reader(mode, extra, args.url, table)
                if args.repeat > 1:
                    print(f"run {k + 1} {mode:17s} {r['rows'] / r['seconds']:>9,.0f} rows/s; CPU {r['cpu_s']:5.1f} s "
                          f"(+ server {r['server_cpu_s']:4.1f} s); peak RSS {r['peak_rss_mb']:7.1f} MB; load average "
                          f"{os.getloadavg()[0]:.1f}", flush=True)
                if mode not in results or r["seconds"] < results[mode]["seconds"]:
                    results[mode] = r
        for mode, r in results.items():
            print(f"{mode:17s} {r['rows']:>9,d} rows in {r['seconds']:7.1f} s = {r['rows'] / r['seconds']:>9,.0f} rows/s; "
                  f"CPU {r['cpu_s']:6.1f} s (+ server {r['server_cpu_s']:5.1f} s); peak RSS {r['peak_rss_mb']:7.1f} MB (after imports {r['base_rss_mb']:.1f} MB)")
    finally:
        engine = sa.create_engine(args.url)
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE {table}"))
        engine.dispose()
    tl, pd_ = results["tuneloop"], results["pandas"]
    speed = (tl["rows"] / tl["seconds"]) / (pd_["rows"] / pd_["seconds"])
    mem = tl["peak_rss_mb"] / pd_["peak_rss_mb"]
    mem_growth = (tl["peak_rss_mb"] - tl["base_rss_mb"]) / max(pd_["peak_rss_mb"] - pd_["base_rss_mb"], 1e-9)
    print(f"tuneloop counts: {tl['counts']}; output sha256 {tl['sha256'][:16]}")
    for other, label in (("tuneloop-rows", "row path"), ("tuneloop-ray", "Ray path")):
        if other in results:
            o = results[other]
            same = o["sha256"] == tl["sha256"] and o["counts"] == tl["counts"]
            print(f"fast vs {label}: output sha256 {tl['sha256'][:16]} {'identical' if same else 'DIFFERENT'}; "
                  f"fast is {(tl['rows'] / tl['seconds']) / (o['rows'] / o['seconds']):.2f}x its rows/s")
    print(f"ratio rows/s (tuneloop / pandas): {speed:.2f}x   (target >= 2x); rows per CPU second (client processes "
          f"only, not the database server): {pd_['cpu_s'] / tl['cpu_s']:.2f}x; client + server: "
          f"{(pd_['cpu_s'] + pd_['server_cpu_s']) / (tl['cpu_s'] + tl['server_cpu_s']):.2f}x")
    print(f"ratio peak RSS (tuneloop / pandas): {mem:.2f}   (target <= 0.25); growth over imports: {mem_growth:.2f}")


if __name__ == "__main__":
    main()
