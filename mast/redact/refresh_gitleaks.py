"""Convert gitleaks' ``config/gitleaks.toml`` at a pinned commit into ``mast/data/gitleaks_rules.json``.

Run from a gitleaks checkout at the commit to pin (the rule set's MIT notice goes into the file)::

    git clone https://github.com/gitleaks/gitleaks && git -C gitleaks checkout <sha>
    python -m mast.redact.refresh_gitleaks gitleaks/config/gitleaks.toml --commit <sha>

Then run ``tests/test_redact_gitleaks.py``: every converted rule needs a positive and a near-miss
example in ``tests/data/redact/gitleaks_cases.json`` (``--cases`` writes examples for rules without).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from mast.redact.gitleaks import DATA_FILE, convert

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    import argparse
    import tomllib

    parser = argparse.ArgumentParser(prog="python -m mast.redact.refresh_gitleaks")
    parser.add_argument("toml", type=Path, help="gitleaks' config/gitleaks.toml at the commit to pin")
    parser.add_argument("--commit", required=True, help="the gitleaks commit the file comes from")
    parser.add_argument("--license", type=Path, help="gitleaks' LICENSE (default: LICENSE next to config/)")
    parser.add_argument("--out", type=Path, default=DATA_FILE)
    args = parser.parse_args(argv)
    license_file = args.license or args.toml.resolve().parent.parent / "LICENSE"
    if not license_file.is_file():
        raise SystemExit(f"{license_file}: gitleaks' LICENSE is needed (its notice ships with the rules); pass --license")
    data = convert(
        tomllib.loads(args.toml.read_text(encoding="utf-8")), args.commit, license_file.read_text(encoding="utf-8")
    )
    args.out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(data['rules'])} rules from gitleaks {args.commit[:12]}, {len(data['skipped'])} skipped")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
