"""Where the tests' sample data lives: inside the repository, so a clone with nothing beside it passes.

``TRACES`` holds real sample traces per source format (``tests/data/traces/<format>/``), ``VALIDATION``
the label sets and the traces they label (``data/validation/<set>/``), ``REFERENCE`` published figures
the tests compare with. Every third-party folder has a MANIFEST.md; see THIRD_PARTY_DATA.md.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TRACES = REPO / "tests" / "data" / "traces"
VALIDATION = REPO / "data" / "validation"
REFERENCE = REPO / "data" / "reference"
