"""Durability under load (issue 19, item 5): the feedback collector on PostgreSQL, many clients
writing with idempotency keys, the collector killed with SIGKILL in the middle and restarted.

Usage::

    .venv/bin/python bench/collector_load.py [--clients 50] [--seconds 60] [--url postgresql+psycopg2://postgres@127.0.0.1:5432/test]

A fresh PostgreSQL schema holds the store (dropped at the end). The collector runs in its own
process (``create_app`` under uvicorn, as ``tuneloop feedback serve`` runs it). Each client posts
ratings (``POST /v1/feedback``), each with its own ``Idempotency-Key``; every 10th is posted twice
(a retry after a lost response), and a request that fails (connection refused or reset while the
collector is down, a 5xx) is retried with the same key until it is acknowledged. Halfway through
(``--kill-at``, a fraction of ``--seconds``) the collector gets SIGKILL and a new one starts on
the same port. At the end the store is checked: every acknowledged write is there exactly once
(``lost``, ``duplicated``: both must be 0) and no write is there that no client sent. Prints the
counts and the p50/p99 latency of acknowledged requests (ms, retries of a failed request
included in its latency), and exits 1 when anything was lost or duplicated.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SERVER = ("import sys, uvicorn\nfrom feedback.service import create_app\n"
          "uvicorn.run(create_app(sys.argv[1], upgrade=False), host='127.0.0.1', port=int(sys.argv[2]), "
          "log_level='error')")
CALL = {"external_id": "load-1", "conversation_id": "c1", "model": "m", "latency_ms": 1.0,
        "messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]}


def free_port() -> int:
    """An unused TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(url: str, port: int) -> subprocess.Popen:
    """The collector in its own process; returns once it answers ``/healthz`` (or any HTTP)."""
    import httpx

    proc = subprocess.Popen([sys.executable, "-c", SERVER, url, str(port)], env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/v1/feedback", timeout=2)
            return proc
        except httpx.TransportError:
            if proc.poll() is not None:
                raise SystemExit(f"the collector exited with {proc.returncode}") from None
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the collector did not start within 120 s")


class Client(threading.Thread):
    """Posts ratings until ``stop`` is set; records acknowledged keys, ids and latencies."""

    def __init__(self, n: int, base: str, key: str, iid: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.n, self.base, self.key, self.iid, self.stop = n, base, key, iid, stop
        self.acked: dict[str, int] = {}
        self.latencies: list[float] = []
        self.retries = self.problems = 0

    def post(self, client, idem: str) -> int | None:
        """One write, retried with the same key until acknowledged (gives up 60 s after ``stop``)."""
        import httpx

        body = {"interaction_id": self.iid, "rating": 1, "user_id": f"u{self.n}", "comment": idem}
        while True:
            try:
                r = client.post("/v1/feedback", json=body, headers={"Idempotency-Key": idem})
                if r.status_code in (200, 201):
                    return r.json()["id"]
                if r.status_code < 500:
                    self.problems += 1
                    return None
            except httpx.TransportError:
                pass
            self.retries += 1
            if self.stop.is_set() and time.monotonic() > self.stop_at + 60:
                return None
            time.sleep(0.05)

    def run(self) -> None:
        import httpx

        self.stop_at = float("inf")
        with httpx.Client(base_url=self.base, headers={"X-API-Key": self.key}, timeout=30) as client:
            i = 0
            while not self.stop.is_set():
                idem = f"{self.n}-{i}"
                t0 = time.perf_counter()
                got = self.post(client, idem)
                if got is not None and i % 10 == 0:  # the same write again, as after a lost response
                    again = self.post(client, idem)
                    if again != got:
                        self.problems += 1
                if got is not None:
                    self.acked[idem] = got
                    self.latencies.append((time.perf_counter() - t0) * 1000)
                i += 1


def check(url: str, clients: list[Client]) -> dict[str, int]:
    """Compare the store with what the clients were told."""
    import sqlalchemy as sa

    from feedback.store import FeedbackEvent, sessions

    acked = {k: v for c in clients for k, v in c.acked.items()}
    with sessions(url, upgrade=False)() as s:
        rows = s.execute(sa.select(FeedbackEvent.id, FeedbackEvent.comment)).all()
    by_comment: dict[str, list[int]] = {}
    for rid, comment in rows:
        by_comment.setdefault(comment, []).append(rid)
    return {"acknowledged": len(acked), "stored": len(rows),
            "lost": sum(1 for k, rid in acked.items() if rid not in by_comment.get(k, [])),
            "duplicated": sum(len(v) - 1 for v in by_comment.values() if len(v) > 1),
            "unacknowledged_stored": sum(1 for k in by_comment if k not in acked),
            "retries": sum(c.retries for c in clients), "client_errors": sum(c.problems for c in clients)}


def run(url: str, n_clients: int, seconds: float, kill_at: float) -> dict:
    """The whole experiment on the store at ``url`` (migrated here); returns counts and latencies."""
    import httpx

    from feedback.store import create_api_key, sessions

    with sessions(url)() as s:
        key = create_api_key(s, "load-test")
    port = free_port()
    server = start_server(url, port)
    base = f"http://127.0.0.1:{port}"
    iid = httpx.post(f"{base}/v1/interactions", json=CALL, headers={"X-API-Key": key, "Idempotency-Key": "setup"},
                     timeout=30).json()["id"]
    stop = threading.Event()
    clients = [Client(n, base, key, iid, stop) for n in range(n_clients)]
    for c in clients:
        c.start()
    time.sleep(seconds * kill_at)
    before = sum(len(c.acked) for c in clients)
    os.kill(server.pid, signal.SIGKILL)
    server.wait()
    killed = time.monotonic()
    server = start_server(url, port)
    down_s = time.monotonic() - killed
    time.sleep(max(seconds * (1 - kill_at) - down_s, 1))
    for c in clients:
        c.stop_at = time.monotonic()
    stop.set()
    for c in clients:
        c.join()
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=30)
    lat = sorted(x for c in clients for x in c.latencies)
    return {**check(url, clients), "acknowledged_before_kill": before, "down_s": round(down_s, 1),
            "p50_ms": round(statistics.median(lat), 1) if lat else None,
            "p99_ms": round(lat[int(0.99 * (len(lat) - 1))], 1) if lat else None}


def main() -> None:
    """Make a fresh schema, run, print, drop the schema; exit 1 on any loss or duplicate."""
    import sqlalchemy as sa

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="postgresql+psycopg2://postgres@127.0.0.1:5432/test")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--kill-at", type=float, default=0.5)
    args = ap.parse_args()
    name = f"load_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(args.url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {name}"))
    try:
        out = run(f"{args.url}?options=-csearch_path%3D{name}", args.clients, args.seconds, args.kill_at)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP SCHEMA {name} CASCADE"))
        admin.dispose()
    print(f"{args.clients} clients, {args.seconds:.0f} s, SIGKILL at {args.kill_at:.0%} (down {out['down_s']} s); "
          f"load average {os.getloadavg()[0]:.1f}")
    print(" ".join(f"{k}={v}" for k, v in out.items()))
    sys.exit(1 if out["lost"] or out["duplicated"] or out["client_errors"] else 0)


if __name__ == "__main__":
    main()
