"""The layer contract holds: imports point down the pipeline, and importing a layer loads nothing above it.

The contract is written once, in ``pyproject.toml`` (``[tool.importlinter]``), and read by
import-linter, which sees every import statement, those inside functions included.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Layers from the bottom up, as pyproject.toml lists them (top first there).
ABOVE = {
    "mast.trace": ["mast.normalize", "mast.redact", "mast.diagnosis", "mast.judge", "mast.batch", "mast.evaluation",
                   "mast.analysis", "mast.report", "mast.cli"],
    "mast.taxonomy": ["mast.trace", "mast.normalize", "mast.judge", "mast.batch", "mast.evaluation", "mast.cli"],
    "mast.normalize": ["mast.diagnosis", "mast.judge", "mast.batch", "mast.evaluation", "mast.analysis", "mast.cli"],
    "mast.redact": ["mast.normalize", "mast.judge", "mast.batch", "mast.evaluation", "mast.cli"],
    "mast.judge": ["mast.batch", "mast.evaluation", "mast.analysis", "mast.report", "mast.cli"],
    "mast.batch": ["mast.engines", "mast.integrations.ray", "mast.evaluation", "mast.analysis", "mast.report",
                   "mast.cli"],
    "mast.sources": ["mast.sinks", "mast.integrations", "mast.judge", "mast.batch", "mast.engines", "mast.cli"],
    "mast.sinks": ["mast.batch", "mast.engines", "mast.cli"],
    "mast.evaluation": ["mast.judge", "mast.batch", "mast.analysis", "mast.report", "mast.cli"],
}
HEAVY = ["litellm", "sklearn", "statsmodels", "matplotlib"]


def loaded_after(statement: str) -> list[str]:
    probe = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    return list(json.loads(done.stdout))


def test_the_import_contract_in_pyproject_holds() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()",
         "--no-cache", "--no-logo"],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert " 0 broken" in done.stdout


@pytest.mark.parametrize("layer", sorted(ABOVE))
def test_importing_a_layer_loads_nothing_above_it(layer: str) -> None:
    modules = loaded_after(f"import {layer}")
    above = [m for m in modules if any(m == a or m.startswith(a + ".") for a in ABOVE[layer])]
    assert above == [], f"import {layer} loaded {above}"
    heavy = [m for m in modules if m.split(".")[0] in HEAVY]
    if layer != "mast.evaluation":  # the evaluation side is where scikit-learn and statsmodels belong
        assert heavy == [], f"import {layer} loaded {heavy}"


def test_import_mast_loads_only_the_package_itself() -> None:
    modules = loaded_after("import mast")
    assert sorted(m for m in modules if m.startswith("mast")) == ["mast", "mast.__about__"]
