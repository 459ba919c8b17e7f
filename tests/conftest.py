"""Shared fixtures: a tiny random model built offline, once per test session."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> str:
    """A tiny random Llama with a ChatML tokenizer (no network, a few seconds)."""
    from sdk.models import build_tiny_model

    return str(build_tiny_model(tmp_path_factory.mktemp("tiny-model") / "model"))
