"""The judge's prompts: versioned template files in ``prompts/judge/<version>/``, rendered from the taxonomy.

Each call has a static part (instructions, taxonomy definitions, few-shot examples, answer format),
byte-identical for every trace so providers can cache it, sent as the system message; and a
trace-specific part sent last, where the run sits inside a fence whose name the trace text does not
contain. :attr:`PromptSet.hash` is the sha256 of the static parts and is recorded in every result.

Example:
    >>> from mast.taxonomy import load_taxonomy
    >>> prompts = load_prompts(load_taxonomy())
    >>> prompts.version, len(prompts.hash)
    ('judge-v1', 64)
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from string import Template

from mast.errors import UsageError
from mast.judge.schema import DIAGNOSIS_SCHEMA_NAME, WINDOW_SCHEMA_NAME
from mast.resources import prompts_dir
from mast.taxonomy import Taxonomy

PROMPT_VERSION = "judge-v1"

FENCE_BASE = "MAST_TRACE"


@dataclass(frozen=True)
class PromptSet:
    """The rendered static parts of one prompt version, and the templates of the trace parts."""

    version: str
    """Prompt version (folder name under ``prompts/judge/``)."""
    single: str
    """System message of a single-call judgement."""
    window: str
    """System message of one window of the chunked strategy."""
    aggregate: str
    """System message of the chunked strategy's aggregation call."""
    trace_template: Template
    """Trace-specific part of a single call."""
    window_template: Template
    """Trace-specific part of one window."""
    aggregate_template: Template
    """Trace-specific part of the aggregation call."""

    @property
    def hash(self) -> str:
        """sha256 of the static parts, in a fixed order."""
        digest = hashlib.sha256()
        for part in (self.single, self.window, self.aggregate):
            digest.update(part.encode("utf-8"))
            digest.update(b"\x00")
        return digest.hexdigest()


def render_taxonomy(taxonomy: Taxonomy) -> str:
    """The taxonomy as prompt text: categories, then each mode's code, name, definition and evidence."""
    lines: list[str] = []
    for category, title in taxonomy.categories.items():
        lines.append(f"## {category}: {title}")
        for mode in taxonomy.modes:
            if mode.category != category:
                continue
            lines.append(f"- {mode.code} {mode.name}: {' '.join(mode.definition.split())}")
            if mode.evidence:
                lines.append(f"  Look for: {' '.join(mode.evidence.split())}")
            # Discovered modes (mast.discovery) also carry rules and verified examples.
            if mode.when_to_use:
                lines.append(f"  Use when: {' '.join(mode.when_to_use.split())}")
            if mode.when_not_to_use:
                lines.append(f"  Not when: {' '.join(mode.when_not_to_use.split())}")
            for example in mode.examples:
                lines.append(f"  Example: \"{' '.join(example.quote.split())}\"")
        lines.append("")
    return "\n".join(lines).rstrip()


def _read(folder_name: str, name: str) -> str:
    path = prompts_dir() / "judge" / folder_name / name
    try:
        return path.read_text(encoding="utf-8").rstrip("\n")
    except OSError as exc:
        raise UsageError(f"prompt template {path} cannot be read: {exc}") from exc


_CACHE: dict[tuple[str, str], PromptSet] = {}


def load_prompts(taxonomy: Taxonomy, version: str = PROMPT_VERSION) -> PromptSet:
    """Render the static parts of ``version`` for ``taxonomy`` (memoised)."""
    key = (version, taxonomy.fingerprint())
    if key in _CACHE:
        return _CACHE[key]
    if not (prompts_dir() / "judge" / version).is_dir():
        raise UsageError(f"unknown prompt version {version!r}")
    common = {
        "taxonomy": render_taxonomy(taxonomy),
        "taxonomy_version": taxonomy.version,
        "n_modes": str(len(taxonomy.modes)),
        "codes": ", ".join(taxonomy.codes),
        "first_code": taxonomy.codes[0],
    }
    diagnosis_format = Template(_read(version, "answer-diagnosis.md")).substitute(common)
    window_format = Template(_read(version, "answer-window.md")).substitute(common)
    examples = _read(version, "examples.md")
    single = Template(_read(version, "single.md")).substitute(
        common, schema_name=DIAGNOSIS_SCHEMA_NAME, examples=examples, answer_format=diagnosis_format
    )
    window = Template(_read(version, "window.md")).substitute(
        common, schema_name=WINDOW_SCHEMA_NAME, answer_format=window_format
    )
    aggregate = Template(_read(version, "aggregate.md")).substitute(
        common, schema_name=DIAGNOSIS_SCHEMA_NAME, answer_format=diagnosis_format
    )
    prompts = PromptSet(
        version=version,
        single=single,
        window=window,
        aggregate=aggregate,
        trace_template=Template(_read(version, "trace.md")),
        window_template=Template(_read(version, "window-input.md")),
        aggregate_template=Template(_read(version, "aggregate-input.md")),
    )
    _CACHE[key] = prompts
    return prompts


def choose_fence(*texts: str) -> str:
    """A fence name that occurs in none of ``texts``, so no trace text can close the fence early.

    ``MAST_TRACE`` when the texts never mention it; otherwise the same name with a suffix derived
    from the texts (deterministic, so the same trace always gets the same prompt). A mention counts
    in any case and in look-alike letters too (``МАЅТ_ТRАСЕ`` in Cyrillic, fullwidth ``ＭＡＳＴ``, a
    zero-width space inside it): the texts are compared by their :func:`fence_skeleton`.
    """
    joined = "\x00".join(texts)
    skeleton = fence_skeleton(joined)
    if FENCE_BASE.casefold() not in skeleton:
        return FENCE_BASE
    seed = hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()
    for attempt in range(1000):
        candidate = f"{FENCE_BASE}_{seed[attempt % 56 : attempt % 56 + 8]}_{attempt}"
        if candidate.casefold() not in skeleton:
            return candidate
    raise UsageError("cannot find a fence name absent from the trace")  # pragma: no cover - needs 1000 collisions


# Characters that render as nothing: a fence name with one inside still reads as the fence. Unicode's
# confusables data leaves these to the separate "default ignorable" property, which Python's
# unicodedata does not expose, so the few that matter (format characters in text) are listed here.
_INVISIBLE = "\u00ad\u061c\u180e\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e" \
    "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff"
_FENCE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"


@lru_cache(maxsize=1)
def _skeleton_table() -> dict[int, str | None]:
    """Every look-alike of a fence character (Unicode's confusables.txt) -> that ASCII character."""
    from confusable_homoglyphs.confusables import confusables_data

    table: dict[int, str | None] = dict.fromkeys(map(ord, _INVISIBLE))
    for target in _FENCE_ALPHABET:
        for glyph in confusables_data.get(target, []):
            look_alike = glyph["c"]
            if len(look_alike) == 1 and not look_alike.isascii():
                table.setdefault(ord(look_alike), target)
    for char, glyphs in confusables_data.items():
        if len(char) == 1 and not char.isascii() and ord(char) not in table:
            for glyph in glyphs:
                if len(glyph["c"]) == 1 and glyph["c"] in _FENCE_ALPHABET:
                    table[ord(char)] = glyph["c"]
                    break
    return table


def fence_skeleton(text: str) -> str:
    """``text`` case-folded, with every look-alike of a letter, digit or ``_`` replaced by it and invisible characters dropped.

    Compatibility forms are decomposed (NFKD) and combining marks dropped first. Two texts with the
    same skeleton look the same to a reader (and to a model reading a fence).
    """
    if not text.isascii():
        # Compatibility forms decomposed and combining marks (an accent over a letter, an enclosing
        # circle) dropped first: "E\u0301" reads as "E" to a reader skimming for the fence.
        text = "".join(c for c in unicodedata.normalize("NFKD", text) if unicodedata.category(c) not in ("Mn", "Me"))
        text = text.translate(_skeleton_table())
    return text.casefold()


def hints_block(hints: str | None) -> str:
    """The detectors' hints as a labelled section inside the fence (empty without hints).

    Hints quote the trace, so they are data like the trace and sit inside the same fence.
    """
    if not hints or not hints.strip():
        return ""
    return (
        "DETECTOR HINTS (from mast's offline rules; they quote the run and can be wrong, so confirm "
        "each in the transcript before using it):\n" + hints.strip() + "\n\n"
    )
