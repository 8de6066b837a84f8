"""The notebooks run top to bottom on the shared data, with no API key (slow: each starts a kernel)."""

from __future__ import annotations

from pathlib import Path

import nbclient
import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["validate_judge.ipynb", "failure_distribution.ipynb"])
def test_notebook_runs_top_to_bottom(name: str, shared: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_SHARED", str(shared))
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()  # raises CellExecutionError, naming the cell, on any failure
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    figures = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(figures) >= (1 if name == "validate_judge.ipynb" else 5)
    text = " ".join(str(o.get("data", {}).get("text/plain", "")) + str(o.get("text", "")) for o in outputs)
    if name == "validate_judge.ipynb":
        assert "184 cells compared" in text and "Fleiss kappa 0.896" in text
    else:
        assert "19 traces" in text and "modes_per_failed_trace" in text
