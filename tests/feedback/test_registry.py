"""The adapter registry: numbering, lineage, state machine, gate refusals, audit log, races."""

from __future__ import annotations

import threading
import uuid

import pytest
import sqlalchemy as sa

from feedback.registry import (ConflictError, GateRefusedError, Registration, UnknownError, diff_versions,
                               get_head, get_version, list_events, list_versions, register)
from feedback.store import create_api_key, sessions
from feedback.transitions import end_canary, promote, rollback, start_canary


def reg(path: str = "/a", gate: bool | None = True, **kw) -> Registration:
    return Registration(adapter_path=path, adapter_sha256="ab" * 32, lora_rank=8, base_model="tiny",
                        base_model_sha256="cd" * 32, gate_passed=gate, **kw)


@pytest.fixture
def factory(tmp_path):
    make = sessions(f"sqlite:///{tmp_path / 'store.db'}")
    with make() as s:
        create_api_key(s, "bot")
        create_api_key(s, "other")
    return make


def test_versions_are_numbered_per_name_with_lineage(factory):
    with factory() as s:
        one = register(s, "bot", "support", reg(taskset_version="t1", feedback_watermark=10,
                                                config={"sft": {"lora": {"r": 8}}}), actor="ann")
        two = register(s, "bot", "support", reg("/b", parent=1, taskset_version="t2", feedback_watermark=25,
                                                config={"sft": {"lora": {"r": 16}}}), actor="ann")
        register(s, "bot", "other-name", reg(), actor="ann")
        assert (one.label, two.label, two.parent, two.state) == ("support@1", "support@2", 1, "candidate")
        assert two.code_version.startswith("tuneloop ")
        assert [v.label for v in list_versions(s, "bot", "support")] == ["support@1", "support@2"]
        d = diff_versions(one, two)
        assert d["config.sft.lora.r"] == (8, 16) and d["feedback_watermark"] == (10, 25)
        assert d["parent"] == (None, 1) and "base_model" not in d
        with pytest.raises(UnknownError, match="registered: @1, @2"):
            get_version(s, "bot", "support", 7)
        with pytest.raises(UnknownError, match="no version support@1"):
            get_version(s, "other", "support", 1)  # another application sees nothing


def test_promote_canary_promote_rollback_is_audited(factory):
    with factory() as s:
        for p in ("/a", "/b", "/c"):
            register(s, "bot", "support", reg(p), actor="ann")
        promote(s, "bot", "support", 1, actor="ann", reason="first")
        start_canary(s, "bot", "support", 2, 0.25, {"min_samples": 10, "max_drop": 0.05}, actor="loop", reason="new")
        head = get_head(s, "bot", "support")
        assert (head.production, head.canary, head.canary_fraction) == (1, 2, 0.25)
        assert get_version(s, "bot", "support", "canary").number == 2
        promote(s, "bot", "support", "canary", actor="loop", reason="canary won")
        assert get_head(s, "bot", "support").canary is None
        assert [v.state for v in list_versions(s, "bot", "support")] == ["retired", "production", "candidate"]
        back = rollback(s, "bot", "support", actor="bob", reason="complaints")
        assert back.number == 1 and get_version(s, "bot", "support", 2).state == "retired"
        log = [(e.number, e.action, e.from_state, e.to_state, e.actor) for e in list_events(s, "bot", "support")]
        assert log[3:] == [(1, "promote", "candidate", "production", "ann"), (2, "canary", "candidate", "canary", "loop"),
                           (2, "promote", "canary", "production", "loop"), (1, "retire", "production", "retired", "loop"),
                           (1, "rollback", "retired", "production", "bob"), (2, "rollback", "production", "retired", "bob")]
        assert all(e.at is not None for e in list_events(s, "bot"))
        assert list_events(s, "bot")[-1].reason == "complaints"
        with pytest.raises(ConflictError, match="no earlier one"):  # a second rollback never goes forward to @2
            rollback(s, "bot", "support", actor="bob", reason="again")


def test_refusals_are_clear(factory):
    with factory() as s:
        register(s, "bot", "support", reg(), actor="ann")
        register(s, "bot", "support", reg(gate=False, gate_reasons=("held-out pass@1 fell 0.2", "3 regressions")),
                 actor="ann")
        register(s, "bot", "support", reg(gate=None), actor="ann")
        with pytest.raises(GateRefusedError, match="held-out pass@1 fell 0.2; 3 regressions"):
            promote(s, "bot", "support", 2, actor="ann", reason="")
        with pytest.raises(GateRefusedError, match="no regression gate judged it"):
            promote(s, "bot", "support", 3, actor="ann", reason="")
        with pytest.raises(UnknownError, match="no production version"):
            rollback(s, "bot", "support", actor="ann", reason="")
        with pytest.raises(ConflictError, match="no production version for the canary"):
            start_canary(s, "bot", "support", 1, 0.1, {}, actor="ann", reason="")
        promote(s, "bot", "support", 1, actor="ann", reason="")
        with pytest.raises(ConflictError, match="no earlier one to roll back to"):
            rollback(s, "bot", "support", actor="ann", reason="")
        with pytest.raises(ConflictError, match="production already"):
            promote(s, "bot", "support", 1, actor="ann", reason="")
        with pytest.raises(UnknownError, match="no canary running"):
            end_canary(s, "bot", "support", actor="ann", reason="")
        with pytest.raises(UnknownError, match="no application"):
            promote(s, "nobody", "support", 1, actor="ann", reason="")
        with pytest.raises(UnknownError, match="support@9") as unknown:  # a version number never registered
            promote(s, "bot", "support", 9, actor="ann", reason="")
        assert unknown.value.fix  # the refusal says what to do
        assert get_head(s, "bot", "support").production == 1
        assert [e.action for e in list_events(s, "bot")].count("promote") == 1


def race(factory, numbers: list[int], monkeypatch) -> tuple[list, list]:
    """Promote each of ``numbers`` from its own thread, all having read the same head before any
    writes (a barrier in front of the conditional UPDATE); returns (winners, conflict messages)."""
    import feedback.transitions as tr

    barrier = threading.Barrier(len(numbers))
    original = tr._commit_move

    def synchronised(*args, **kwargs):
        barrier.wait(timeout=30)
        return original(*args, **kwargs)

    monkeypatch.setattr(tr, "_commit_move", synchronised)
    won, lost = [], []

    def go(n: int) -> None:
        with factory() as s:
            try:
                won.append(promote(s, "bot", "support", n, actor=f"t{n}", reason="race").number)
            except ConflictError as exc:
                lost.append(str(exc))

    threads = [threading.Thread(target=go, args=(n,)) for n in numbers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    monkeypatch.setattr(tr, "_commit_move", original)
    return won, lost


def check_race(factory, monkeypatch) -> int:
    with factory() as s:
        for p in "abcdef":
            register(s, "bot", "support", reg(f"/{p}"), actor="ann")
        promote(s, "bot", "support", 1, actor="ann", reason="")
    for attempt in range(3):  # several rounds: each time exactly one of five wins
        with factory() as s:
            prod = get_head(s, "bot", "support").production
        others = [n for n in range(1, 7) if n != prod]
        won, lost = race(factory, others, monkeypatch)
        assert len(won) == 1 and len(lost) == 4, (won, lost)
        assert all("committed first" in m for m in lost)
        with factory() as s:
            states = [v.state for v in list_versions(s, "bot", "support")]
            assert states.count("production") == 1 and get_head(s, "bot", "support").production == won[0]
            promotes = [e for e in list_events(s, "bot") if e.action == "promote"]
            assert len(promotes) == 2 + attempt and promotes[-1].number == won[0]
    return won[0]


def test_concurrent_promotions_have_one_winner_sqlite(factory, monkeypatch):
    assert check_race(factory, monkeypatch) in range(1, 7)


@pytest.mark.postgres
def test_concurrent_promotions_have_one_winner_postgres(monkeypatch):
    admin = sa.create_engine("postgresql+psycopg2://postgres@127.0.0.1:5432/test", isolation_level="AUTOCOMMIT")
    try:
        admin.connect().close()
    except sa.exc.OperationalError as exc:
        pytest.skip(f"PostgreSQL not reachable: {exc.orig}")
    schema = f"tlreg_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    try:
        make = sessions(f"postgresql+psycopg2://postgres@127.0.0.1:5432/test?options=-csearch_path%3D{schema}")
        with make() as s:
            create_api_key(s, "bot")
        assert check_race(make, monkeypatch) in range(1, 7)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()
