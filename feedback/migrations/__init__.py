"""Alembic migrations of the feedback store (shipped inside the package)."""
