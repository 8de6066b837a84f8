"""MkDocs hooks: the pages generated from the code, and the checks that keep the docs honest.

Placeholders in the pages are replaced at build time, so the tables cannot drift from the code:
``<!-- mast:formats -->`` (the format registry with each reader's real-file coverage) and
``<!-- mast:errors -->`` (the error tree with exit codes). The build warns (and ``--strict`` fails)
when a command option has no help text or a ``MAST_*`` variable read by the code is missing from
the environment page. MkDocs hooks are plain functions; nothing here is a library's job.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import click

log = logging.getLogger("mkdocs.hooks.mast")
ROOT = Path(__file__).resolve().parent.parent


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def formats_table() -> str:
    """The registry's formats as a Markdown table, with the real files each reader is tested on."""
    from mast.normalize import formats
    from mast.normalize._coverage import DOCUMENTATION_ONLY, format_coverage

    coverage = format_coverage()
    rows = ["| format | reads | real files | repositories | versions tested |", "|---|---|---|---|---|"]
    for fmt in formats():
        entry = coverage.get(fmt.name)
        files = entry.files if entry else 0
        repos = len(entry.repositories) if entry and entry.files else ""
        versions = "; ".join(entry.versions) if entry and entry.files else DOCUMENTATION_ONLY
        rows.append(f"| `{fmt.name}` | {_cell(fmt.description)} | {files} | {repos} | {_cell(versions)} |")
    return "\n".join(rows)


def errors_tree() -> str:
    """``mast.errors`` as a nested list: each class, its exit status and what it means."""
    from mast import errors

    classes = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.MastError)]
    lines: list[str] = []

    def walk(cls: type, depth: int) -> None:
        doc = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        lines.append(f"{'    ' * depth}- `{cls.__name__}` (exit {getattr(cls, 'exit_code', 1)}): {doc}")
        for sub in sorted((c for c in classes if cls in c.__bases__), key=lambda c: c.__name__):
            walk(sub, depth + 1)

    walk(errors.MastError, 0)
    return "\n".join(lines)


def options_without_help() -> list[str]:
    """``mast label --foo`` for every option of every command that has no help text."""
    from mast.cli import main

    missing: list[str] = []

    def walk(command: click.Command, prefix: str) -> None:
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden and not (param.help or "").strip():
                missing.append(f"{prefix} {param.opts[0]}")
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                if not sub.hidden:  # internal commands (`mast hooks label`) are not documented
                    walk(sub, f"{prefix} {name}")

    walk(main, "mast")
    return missing


def env_variables() -> set[str]:
    """Every ``MAST_*`` name the package's code mentions."""
    names: set[str] = set()  # MAST_TRACE is the prompt fence name, not a variable
    for path in (ROOT / "mast").rglob("*.py"):
        names.update(re.findall(r"\bMAST_[A-Z][A-Z0-9_]*[A-Z0-9]\b", path.read_text(encoding="utf-8")))
    return names - {"MAST_TRACE"}


def on_config(config: Any) -> Any:
    """Warn (fail under ``--strict``) for each command option without help text."""
    for option in options_without_help():
        log.warning("command option without help text: %s", option)
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Fill the generated tables in; on the environment page, warn for each undocumented variable."""
    markdown = markdown.replace("<!-- mast:formats -->", formats_table())
    markdown = markdown.replace("<!-- mast:errors -->", errors_tree())
    if page.file.src_uri == "reference/environment.md":
        for name in sorted(env_variables() - set(re.findall(r"MAST_[A-Z0-9_]+", markdown))):
            log.warning("reference/environment.md does not document %s", name)
    return markdown
