"""Alembic environment for the feedback store; the URL comes from ``config.attributes['url']``."""

from __future__ import annotations

from alembic import context

import feedback.registry_models  # noqa: F401 - the registry's tables join Base.metadata
from feedback.store import Base, make_engine

config = context.config
url = config.attributes.get("url") or config.get_main_option("sqlalchemy.url")


def run_migrations_offline() -> None:
    """Alembic: emit SQL for the migrations without a database connection."""
    context.configure(url=url, target_metadata=Base.metadata, literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Alembic: run the migrations against the configured database."""
    engine = make_engine(url)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
