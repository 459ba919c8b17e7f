"""Fixtures for rollout tests: the tiny model's ChatML tokenizer, plain and with the tool template."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def chatml_tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.fixture()
def tool_tokenizer(tiny_model_dir):
    """A fresh tokenizer with the tool-aware ChatML template installed."""
    from transformers import AutoTokenizer

    from sdk.rollout.chat_template import ensure_tool_template

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    assert ensure_tool_template(tok) == "chatml"
    return tok
