"""The store's Alembic migrations match the ORM (registry tables included; lineage: tests/feedback/test_registry.py)."""

from __future__ import annotations

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

import feedback.registry_models  # noqa: F401 - the registry's tables are part of the schema
from feedback.store import Base, make_engine, migrate


def test_migrations_create_exactly_the_orm_schema(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    migrate(url)
    engine = make_engine(url)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []
    migrate(url)  # idempotent at head


def test_downgrade_to_0001_and_back(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    migrate(url)
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", "feedback/migrations")
    cfg.attributes["url"] = url
    command.downgrade(cfg, "0001")
    assert "training_runs" in sa.inspect(make_engine(url)).get_table_names()
    migrate(url)
    assert "adapter_versions" in sa.inspect(make_engine(url)).get_table_names()
