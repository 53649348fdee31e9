"""The lint step: ruff's rules over the whole project (ruff.toml): pyflakes,
bugbear, pyupgrade, simplify, Django, and the complexity bounds."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_project_passes_its_lint_rules():
    ruff = Path(sys.executable).parent / "ruff"
    result = subprocess.run([str(ruff), "check", "--output-format", "concise", "."],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
