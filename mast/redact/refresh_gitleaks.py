"""Convert gitleaks' ``config/gitleaks.toml`` at a pinned commit into ``mast/data/gitleaks_rules.json``.

Run from a gitleaks checkout at the commit to pin (the rule set's MIT notice goes into the file)::

    git clone https://github.com/gitleaks/gitleaks && git -C gitleaks checkout <sha>
    python -m mast.redact.refresh_gitleaks gitleaks/config/gitleaks.toml --commit <sha>

Then run ``tests/test_redact_gitleaks.py``: every converted rule needs a positive and a near-miss
example in ``tests/data/redact/gitleaks_cases.json`` (``--cases`` writes examples for rules without).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mast.redact.gitleaks import DATA_FILE, GitleaksRules, convert, load_data

__all__ = ["examples", "main"]

CASES_FILE = Path(__file__).resolve().parents[2] / "tests" / "data" / "redact" / "gitleaks_cases.json"

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _python_syntax(regex: str) -> str:
    """An RE2 pattern in a form Python's parser reads, for generating examples only (not matching)."""
    regex = regex.replace("[[:alnum:]]", "[a-zA-Z0-9]").replace("[:alnum:]", "a-zA-Z0-9")
    regex = regex.replace("(?-i:", "(?:").replace("\\z", "\\Z")
    return regex[:4] + regex[4:].replace("(?i)", "") if regex.startswith("(?i)") else regex.replace("(?i)", "")


def _class_chars(items: list[Any]) -> str:
    from re import _constants as c  # type: ignore[attr-defined]

    chars: list[str] = []
    negate = False
    for op, av in items:
        if op is c.NEGATE:
            negate = True
        elif op is c.LITERAL:
            chars.append(chr(av))
        elif op is c.RANGE:
            chars.extend(chr(x) for x in range(av[0], av[1] + 1))
        elif op is c.CATEGORY:
            chars.extend({c.CATEGORY_DIGIT: "0123456789", c.CATEGORY_WORD: _ALNUM + "_", c.CATEGORY_SPACE: " "}.get(av, ""))
    if negate:
        return "".join(x for x in " ;,:" + _ALNUM if x not in chars) or " "
    return "".join(chars) or "x"


def _generate(tree: Any, rng: random.Random) -> str:
    """One string the parsed pattern matches: shortest fillers, random characters in classes."""
    from re import _constants as c  # type: ignore[attr-defined]

    out: list[str] = []
    for op, av in tree:
        if op is c.LITERAL:
            out.append(chr(av))
        elif op is c.NOT_LITERAL:
            out.append(rng.choice([x for x in _ALNUM if ord(x) != av]))
        elif op is c.ANY:
            out.append(".")  # an unescaped dot in these rules stands for a dot ("hooks.slack.com")
        elif op is c.IN:
            out.append(rng.choice(_class_chars(av)))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
            low, high, sub = av
            count = low if high is not c.MAXREPEAT else low + rng.randint(0, 3)
            if low == 0:
                count = 0
            out.extend(_generate(sub, rng) for _ in range(count))
        elif op is c.SUBPATTERN:
            out.append(_generate(av[-1], rng))
        elif op is c.BRANCH:
            alternatives = [a for a in av[1] if not (a.data and a.data[0][0] is c.AT)] or av[1]
            out.append(_generate(rng.choice(alternatives), rng))
        elif op is c.CATEGORY:
            out.append({c.CATEGORY_DIGIT: rng.choice("0123456789"), c.CATEGORY_SPACE: " "}.get(av, rng.choice(_ALNUM)))
    return "".join(out)


def examples(data: dict[str, Any], tries: int = 60, seed: int = 7) -> dict[str, dict[str, str]]:
    """A positive and a near-miss example for each rule of ``data``, each checked.

    The positive is a string the rule's pattern generates (random characters, never a real key) that
    the rule alone finds; the near miss is the same text with the secret cut to half or replaced by
    one repeated character, which the whole redactor keeps.
    """
    from re import _parser  # type: ignore[attr-defined]

    from mast.redact import redact_text

    rng = random.Random(seed)
    found: dict[str, dict[str, str]] = {}
    for entry in data["rules"]:
        alone = GitleaksRules({"allow": data.get("allow", []), "rules": [entry]})
        tree = _parser.parse(_python_syntax(entry["regex"]))
        for _ in range(tries):
            keyword = entry["keywords"][0] if entry.get("keywords") else ""
            # gitleaks tries a rule only where one of its keywords occurs
            text = (f"{keyword} credentials\n" if keyword else "") + "leaked " + _generate(tree, rng) + " end"
            hits = alone.findings(text)
            if not hits:
                continue
            _, start, end = hits[0]
            secret = text[start:end]
            if secret in redact_text(text).text:
                continue
            for stand_in in (secret[: len(secret) // 2], secret[0] * len(secret)):
                near = text[:start] + stand_in + text[end:]
                if not alone.findings(near) and redact_text(near).text == near:
                    found[entry["id"]] = {"positive": text, "secret": secret, "near_miss": near}
                    break
            if entry["id"] in found:
                break
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Convert the TOML named on the command line (see the module docstring); 0 when done."""
    import argparse
    import tomllib

    parser = argparse.ArgumentParser(prog="python -m mast.redact.refresh_gitleaks")
    parser.add_argument("toml", type=Path, help="gitleaks' config/gitleaks.toml at the commit to pin")
    parser.add_argument("--commit", required=True, help="the gitleaks commit the file comes from")
    parser.add_argument("--license", type=Path, help="gitleaks' LICENSE (default: LICENSE next to config/)")
    parser.add_argument("--out", type=Path, default=DATA_FILE)
    parser.add_argument("--cases", action="store_true", help=f"also write examples for every rule to {CASES_FILE}")
    args = parser.parse_args(argv)
    license_file = args.license or args.toml.resolve().parent.parent / "LICENSE"
    if not license_file.is_file():
        raise SystemExit(f"{license_file}: gitleaks' LICENSE is needed (its notice ships with the rules); pass --license")
    data = convert(
        tomllib.loads(args.toml.read_text(encoding="utf-8")), args.commit, license_file.read_text(encoding="utf-8")
    )
    args.out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(data['rules'])} rules from gitleaks {args.commit[:12]}, {len(data['skipped'])} skipped")
    if args.cases:
        from mast.redact import gitleaks

        gitleaks.load_rules.cache_clear()
        cases = examples(load_data(args.out))
        missing = sorted({r["id"] for r in data["rules"]} - set(cases))
        CASES_FILE.write_text(json.dumps({"commit": args.commit, "cases": cases}, indent=1) + "\n", encoding="utf-8")
        print(f"{CASES_FILE}: examples for {len(cases)} rules; none found for {len(missing)}: {', '.join(missing)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
