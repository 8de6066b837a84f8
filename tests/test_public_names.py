"""Every public name resolves to the same object whatever was imported first (issue 13, defect 1).

`mast.evaluate` used to be both a function (through the lazy ``__getattr__``) and a subpackage; once
the subpackage was imported, ``mast.evaluate`` became the module. Each order runs in a fresh
interpreter, since import order is per-process state.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

ORDERS = {
    "plain": "import mast",
    "subpackage first": "import mast.evaluation\nimport mast",
    "from-import first": "from mast import to_dataframe, evaluate\nimport mast",
    "submodule first": "import mast.evaluation.core\nimport mast.analysis\nimport mast",
    "star": "from mast import *\nimport mast",
}

PROBE = """
{setup}
import json, mast
out = {{}}
for name in mast.__all__:
    value = getattr(mast, name)
    out[name] = [type(value).__name__, callable(value), getattr(value, "__module__", None)]
print(json.dumps(out))
"""


def _resolve(setup: str) -> dict[str, list[object]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(setup=setup)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def resolved() -> dict[str, dict[str, list[object]]]:
    return {order: _resolve(setup) for order, setup in ORDERS.items()}


@pytest.mark.spawns
def test_every_public_name_resolves_the_same_in_any_import_order(resolved):
    baseline = resolved["plain"]
    for order, names in resolved.items():
        assert names == baseline, f"import order {order!r} changes what public names are"


@pytest.mark.spawns
def test_evaluate_is_the_function_after_the_subpackage_was_imported(resolved):
    for order, names in resolved.items():
        kind, is_callable, module = names["evaluate"]
        assert (kind, is_callable) == ("function", True), order
        assert module == "mast.evaluation.core", order


def test_evaluate_then_to_dataframe_runs_in_one_script():
    script = (
        "import mast\n"
        "import mast.evaluation\n"
        "gold = 'data/examples/gold.csv'\n"
        "report = mast.evaluate(gold, gold, n_boot=0)\n"
        "print(report.pooled.accuracy)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1.0"


def test_the_public_names_are_declared_once_and_read_back_exactly() -> None:
    """The ``_TYPE_CHECKING`` imports are the one declaration: the lazy table and ``__all__`` are read from them."""
    import ast

    import mast

    tree = ast.parse((REPO / "mast" / "__init__.py").read_text(encoding="utf-8"))
    (block,) = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "_TYPE_CHECKING"]
    declared = {
        a.asname or a.name: n.module for n in block.body if isinstance(n, ast.ImportFrom) for a in n.names
    }
    # Every import re-exports under its own name (``from M import N as N``), so a type checker sees it as public.
    assert all(a.asname == a.name for n in block.body if isinstance(n, ast.ImportFrom) for a in n.names)
    assert mast._LAZY == declared
    assert mast.__all__ == sorted(["__version__", *declared])
    assert len(declared) > 30  # the reading found the block, not an empty prefix of it
