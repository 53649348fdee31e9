"""The lint step: the formatter's style and ruff's rules over the whole project (ruff.toml): pyflakes,
bugbear, pyupgrade, simplify, Django, and the complexity bounds."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_project_passes_its_lint_rules():
    ruff = Path(sys.executable).parent / "ruff"
    result = subprocess.run(
        [str(ruff), "check", "--output-format", "concise", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_project_keeps_the_formatters_style():
    ruff = Path(sys.executable).parent / "ruff"
    result = subprocess.run([str(ruff), "format", "--check", "."], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, "run `.venv/bin/ruff format .`:\n" + result.stdout + result.stderr
