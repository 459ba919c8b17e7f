"""The store's Alembic migrations match the ORM, and lineage rows link up."""

from __future__ import annotations

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from feedback.store import Adapter, Base, TrainingRun, make_engine, migrate, sessions


def test_migrations_create_exactly_the_orm_schema(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    migrate(url)
    engine = make_engine(url)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []
    migrate(url)  # idempotent at head


def test_adapter_lineage(tmp_path):
    with sessions(f"sqlite:///{tmp_path / 'store.db'}")() as s:
        run = TrainingRun(taskset_hash="abcd1234abcd1234", base_model="smollm2-135m", config_json="{}")
        s.add(run)
        s.flush()
        first = Adapter(training_run_id=run.id, path="runs/a1")
        s.add(first)
        s.flush()
        s.add(Adapter(training_run_id=run.id, parent_id=first.id, path="runs/a2", eval_json='{"heldout": 0.2}'))
        s.commit()
        child = s.scalars(sa.select(Adapter).where(Adapter.parent_id.is_not(None))).one()
        assert child.run.taskset_hash == "abcd1234abcd1234" and child.parent_id == first.id
