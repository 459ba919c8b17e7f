"""The shared JSONL record reader."""

import pytest

from sdk.errors import SourceError
from sdk.jsonl import read_models
from sdk.tasks import Message


def test_reads_records_skips_blanks_and_names_a_bad_line(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n\n{"role": "robot", "content": "x"}\n')
    with pytest.raises(SourceError, match=r"m.jsonl:3 is not a valid Message") as err:
        read_models(path, Message, SourceError, "rewrite it")
    assert err.value.fix == "rewrite it"
    path.write_text('{"role": "user", "content": "hi"}\n\n')
    assert read_models(path, Message, SourceError, "") == [Message(role="user", content="hi")]


def test_missing_file(tmp_path):
    assert read_models(tmp_path / "none.jsonl", Message, SourceError, "", missing_ok=True) == []
    with pytest.raises(SourceError, match="does not exist"):
        read_models(tmp_path / "none.jsonl", Message, SourceError, "run the tasks stage")
