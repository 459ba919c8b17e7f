"""The quickstart's seeded feedback database is read through the connector with its config's options."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import yaml

from connectors.feedback_tables.source import SqlFeedbackSource

QUICK = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


@pytest.mark.skipif(not (QUICK / "seed_feedback.py").exists(), reason="quickstart not present")
def test_quickstart_feedback_reads_cleanly(tmp_path):
    subprocess.run([sys.executable, str(QUICK / "seed_feedback.py"), str(tmp_path / "feedback.db")], check=True,
                   capture_output=True)
    config = yaml.safe_load((QUICK / "config.yaml").read_text())
    (spec,) = [s for s in config["sources"] if s["type"] == "sql_feedback"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = SqlFeedbackSource(spec["options"], tmp_path, spec["domain"]).read()
    assert result.counts["quarantined"] == 0 and result.counts["duplicates_dropped"] > 0
    assert result.sft_examples and result.preference_pairs
    text = " ".join(m.content for e in result.sft_examples for m in e.messages)
    assert "@" not in text and re.search(r"\[(EMAIL|PHONE|NATIONAL_ID)_[0-9a-f]{6}\]", text)
