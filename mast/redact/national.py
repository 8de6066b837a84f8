"""National identity and tax numbers, found by their label and proven by their checksum.

A German tax id, a French NIR, a Spanish DNI, a Dutch BSN, an Aadhaar or a CPF is personal data of
the same weight as a US SSN, but a bare run of 9 to 13 digits is any number (an order id, a
timestamp), and one in ten passes a mod-11 check by chance. So a number is a ``national_id`` only
when two things hold:

* it sits where a person writes such a number: after its label ("BSN 461594997", ``"dni": "..."``,
  "N° de sécurité sociale : ...") or in the column of a table whose header is the label
  (``| name | PESEL |``);
* the label's own checksum accepts it. The checksums are python-stdnum's (a maintained library of
  some 200 national formats), not written here: each label names the stdnum modules that may hold
  its number.

Example:
    >>> from mast.redact import redact_text
    >>> redact_text("BSN 461594997 staat niet in de basisregistratie.").text
    'BSN [REDACTED:national_id] staat niet in de basisregistratie.'
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from functools import cache, lru_cache
from types import ModuleType

from mast.redact.placed import ScanRule
from mast.redact.rules import Rule

__all__ = ["LABELS", "national_rules"]

Found = tuple[str, int, int]

LABELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # (label as a regex over lower-cased text, the stdnum modules its number may be in)
    (
        r"steuer[ \-]?id(?:[ \-]?nr)?|steuerliche[ \-]identifikationsnummer|steueridentifikationsnummer"
        r"|identifikationsnummer|idnr",
        ("de.idnr",),
    ),
    (
        r"n\.?i\.?r|num[ée]ro[ \t]de[ \t]s[ée]curit[ée][ \t]sociale|s[ée]curit[ée][ \t]sociale|insee",
        ("fr.nir",),
    ),
    (
        r"d\.?n\.?i|n\.?i\.?e|n\.?i\.?f|documento[ \t]nacional[ \t]de[ \t]identidad",
        ("es.dni", "es.nie", "es.nif"),
    ),
    (r"bsn|burgerservicenummer|sofinummer", ("nl.bsn",)),
    (r"aadhaar|aadhar|uidai", ("in_.aadhaar",)),
    (r"pan", ("in_.pan",)),
    (r"cpf", ("br.cpf",)),
    (r"cnpj", ("br.cnpj",)),
    (r"sin|social[ \t]insurance(?:[ \t]number)?|nas", ("ca.sin",)),
    (r"pesel", ("pl.pesel",)),
    (r"personnummer", ("se.personnummer",)),
    (r"f[øo]dselsnummer", ("no.fodselsnummer",)),
    (r"cpr(?:-nummer)?", ("dk.cpr",)),
    (r"henkil[öo]tunnus|hetu", ("fi.hetu",)),
    (r"codice[ \t]fiscale", ("it.codicefiscale",)),
    (r"ahv(?:-nr)?|avs", ("ch.ssn",)),
    (r"sozialversicherungsnummer|svnr|vsnr", ("at.vnr",)),
    (r"ppsn?", ("ie.pps",)),
    (r"nhs", ("gb.nhs",)),
    (r"itin", ("us.itin",)),
    (r"tfn|tax[ \t]file[ \t]number", ("au.tfn",)),
    (r"ird", ("nz.ird",)),
    (r"curp", ("mx.curp",)),
    (r"rfc", ("mx.rfc",)),
    (r"rut", ("cl.rut",)),
    (r"cuit|cuil", ("ar.cuit",)),
    (r"rrn|주민등록번호", ("kr.rrn",)),
    (r"居民身份证号码|身份证号码|身份证号|身份证", ("cn.ric",)),
    (r"マイナンバー|個人番号|my[ \t]number", ("jp.in_",)),
    (r"t\.?c\.?[ \t]kimlik(?:[ \t]no)?|tckn", ("tr.tckimlik",)),
    (r"cnp", ("ro.cnp",)),
    (r"egn|егн", ("bg.egn",)),
    (r"rodn[ée][ \t][čc][íi]slo", ("cz.rc",)),
    (r"nric|mykad", ("my.nric",)),
    (r"amka", ("gr.amka",)),
    (r"isikukood", ("ee.ik",)),
    (r"asmens[ \t]kodas", ("lt.asmens",)),
    (r"cart[ãa]o[ \t]de[ \t]cidad[ãa]o", ("pt.cc",)),
    (r"rijksregisternummer|num[ée]ro[ \t]national", ("be.nn",)),
)
"""Each national number's labels, and the python-stdnum modules that check it."""

# The words that may follow a label ("BSN-nummer", "SIN no.", "Aadhaar number"), then a separator.
_SUFFIX = r"(?:[ \t_\-]{0,2}(?:number|nummer|numero|número|no|nr|num|#|n°|nº)\.?)?"
_LABEL = re.compile(
    r"(?<![\w])(?:"
    + "|".join(f"(?P<l{i}>{label})" for i, (label, _) in enumerate(LABELS))
    + r")"
    + _SUFFIX
    + r"(?![\w])"
)
_VALUES = (
    re.compile(r"[\"'`]?[ \t]{0,3}(?:[:=#]|:=|=>)?[ \t]{0,3}[\"'`]?(?P<value>[0-9a-z][0-9a-z .\-/]{4,30})"),
    # a few words, then a colon: "CPF do titular: ...", "SIN of the employee = ..."
    re.compile(
        r"(?:[ \t]{1,2}[^\W\d_]{1,14}){1,3}[ \t]{0,2}[:=][ \t]{0,3}[\"'`]?(?P<value>[0-9a-z][0-9a-z .\-/]{4,30})"
    ),
)
_WORD_GROUP = re.compile(r"(?<= )[^\d ]+(?= |$)")
_END = re.compile(r"[0-9a-z](?![0-9a-z])")

# Needles: one literal every label holds (the gate skips a text that has none of them).
_NEEDLES = (
    "steuer",
    "identifikationsnummer",
    "idnr",
    "nir",
    "n.i.r",
    "sécurité",
    "securite",
    "insee",
    "dni",
    "d.n.i",
    "nie",
    "n.i.e",
    "nif",
    "n.i.f",
    "documento",
    "bsn",
    "burgerservicenummer",
    "sofinummer",
    "aadha",
    "uidai",
    "pan",
    "cpf",
    "cnpj",
    "sin",
    "social",
    "nas",
    "pesel",
    "personnummer",
    "dselsnummer",
    "cpr",
    "henkil",
    "hetu",
    "codice",
    "ahv",
    "avs",
    "sozialversicherungsnummer",
    "svnr",
    "vsnr",
    "pps",
    "nhs",
    "itin",
    "tfn",
    "tax file",
    "ird",
    "curp",
    "rfc",
    "rut",
    "cuit",
    "cuil",
    "rrn",
    "주민등록번호",
    "身份证",
    "マイナンバー",
    "個人番号",
    "my number",
    "kimlik",
    "tckn",
    "cnp",
    "egn",
    "егн",
    "rodn",
    "nric",
    "mykad",
    "amka",
    "isikukood",
    "asmens",
    "cart",
    "rijksregisternummer",
    "national",
)


@cache
def _module(name: str) -> ModuleType:
    return importlib.import_module("stdnum." + name)


_SEPARATORS = str.maketrans("", "", " .-/")
_DIGITS = re.compile(r"\d")


@lru_cache(maxsize=4096)  # a page that repeats a number checks it once
def _valid(value: str, modules: tuple[str, ...]) -> bool:
    compact = value.translate(_SEPARATORS)
    # Every number the labels name is 8 to 18 characters once compacted (BSN 9 ... CURP 18), with
    # digits in it: a cheap test before the checksum keeps a page of labels fast.
    if not 8 <= len(compact) <= 18 or len(_DIGITS.findall(compact)) < 4:
        return False  # "pan ABCDE" or "sin tax": a word, not a number
    return any(bool(_module(name).is_valid(value)) for name in modules)


def _modules(match: re.Match[str]) -> tuple[str, ...]:
    group = match.lastgroup  # the label's own group: the only named groups are l0, l1, ...
    return LABELS[int(group[1:])][1] if group else ()


def _labelled(text: str, lowered: str, match: re.Match[str]) -> Found | None:
    """The number right after a label: the longest run that ends on a word boundary and checks."""
    modules = _modules(match)
    for shape in _VALUES:
        value = shape.match(lowered, match.end())
        if value is None:
            continue
        start, stop = value.span("value")
        # Numbers are written in digit groups ("6370 1329 8643"): a group with no digit ends the run.
        group = _WORD_GROUP.search(lowered, start, stop)
        stop = group.start() if group is not None else stop
        ends = [m.end() for m in _END.finditer(lowered, start, stop)]
        for end in reversed(ends[-12:]):  # the longest first: "2 92 08 59 704 051 13" before "2 92"
            if end < len(text) and text[end].isalnum():
                continue
            if _valid(text[start:end], modules):
                return "national_id", start, end
    return None


def _separator(line: str) -> str | None:
    for separator in ("|", "│", "\t", ",", ";"):
        if line.count(separator) >= 1:
            return separator
    return None


def _column(text: str, lowered: str, match: re.Match[str]) -> Iterable[Found]:
    """The cells under a header cell that is the label (``| name | PESEL |``, ``name,bsn``)."""
    # A header is a short line: looking no further than 1 KiB either side keeps a megabyte-long line
    # full of labels linear.
    window = max(0, match.start() - 1024)
    line_start = lowered.rfind("\n", window, match.start()) + 1
    if line_start == 0 and window > 0:
        return
    line_end = lowered.find("\n", match.end(), match.end() + 1024)
    if line_end < 0:
        if match.end() + 1024 < len(lowered):
            return
        line_end = len(lowered)
    header = lowered[line_start:line_end].rstrip("\r")
    separator = _separator(header)
    if separator is None:
        return
    cells = [cell.strip(" \t\"'`*") for cell in header.split(separator)]
    label = lowered[match.start() : match.end()]
    if label not in cells:
        return  # the label is in a sentence, not a header cell
    column = cells.index(label)
    modules = _modules(match)
    position = line_end + 1
    for _ in range(10000):  # a table's rows, up to the first line of another shape
        if position >= len(text):
            return
        row_end = text.find("\n", position)
        row_end = len(text) if row_end < 0 else row_end
        row = text[position:row_end].rstrip("\r")
        if row.count(separator) != header.count(separator):
            return
        offset = position
        for index, cell in enumerate(row.split(separator)):
            if index == column:
                value = cell.strip(" \t\"'`")
                if value and _valid(value, modules):
                    at = offset + cell.index(value)
                    yield "national_id", at, at + len(value)
            offset += len(cell) + len(separator)
        position = row_end + 1


def _national_ids(text: str, lowered: str) -> Iterable[Found]:
    for match in _LABEL.finditer(lowered):
        found = _labelled(text, lowered, match)
        if found is not None:
            yield found
        else:
            yield from _column(text, lowered, match)


@lru_cache(maxsize=1)
def national_rules() -> tuple[Rule, ...]:
    """The rules of this module, in the order they apply (built once)."""
    return (
        ScanRule(
            "national_id",
            re.compile(r"(?!)"),
            check=_national_ids,  # type: ignore[arg-type]  # ScanRule.findings calls it with the whole text
            lower=True,
            needles=_NEEDLES,
            name="national-id",
        ),
    )
