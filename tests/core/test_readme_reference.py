"""The README's config reference is the one generated from sdk/config.py (no drift)."""

from pathlib import Path

from sdk.config import config_reference


def test_readme_config_reference_matches_the_config_models():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert config_reference().strip() in readme, (
        "README.md's config reference is stale: regenerate it with "
        "`python -c \"from sdk.config import config_reference; print(config_reference())\"`")
