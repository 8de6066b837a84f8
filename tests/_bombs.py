"""Small hostile files of issue 34 point 2, built by the tests themselves (nothing copied).

Each is a few hundred kilobytes to a couple of megabytes on disk and expands to gigabytes when a
reader trusts what it says about itself: an Inspect ``.eval`` whose attachment is referenced
20,000 times (and the same as a plain JSON log), an ``.eval`` whose Zstandard member declares size
0, and a VCR cassette of 40 gzip bodies of 32 MiB each. :func:`good_trace` is the clean trace the
batch must still judge beside them.
"""

from __future__ import annotations

import base64
import gzip
import json
import struct
import zlib
from pathlib import Path
from typing import Any

import zstandard

ZSTD_METHOD = 93
HEADER = {
    "version": 2,
    "status": "success",
    "eval": {"task": "bomb", "eval_id": "E1", "model": "openai/gpt-4o"},
    "plan": {"name": "plan", "steps": []},
}


def _attachment_sample(refs: int = 20_000, size: int = 2**20) -> dict[str, Any]:
    """A sample whose one attachment of ``size`` characters is referenced ``refs`` times."""
    return {
        "id": 1,
        "epoch": 1,
        "input": "add two numbers",
        "attachments": {"big": "x" * size},
        "messages": [{"role": "user", "content": "attachment://big"} for _ in range(refs)],
    }


def _zip(members: list[tuple[str, int, bytes, int, int]]) -> bytes:
    """A zip written by hand: (name, method, stored bytes, declared uncompressed size, CRC-32) per member.

    :mod:`zipfile` cannot write a Zstandard member, nor lie about a size, which is the point here.
    """
    out = bytearray()
    central = bytearray()
    for name, method, data, declared, crc in members:
        raw_name = name.encode()
        offset = len(out)
        out += (
            struct.pack(
                "<4sHHHHHIIIHH",
                b"PK\x03\x04",
                20,
                0,
                method,
                0,
                0,
                crc,
                len(data),
                declared,
                len(raw_name),
                0,
            )
            + raw_name
            + data
        )
        central += (
            struct.pack(
                "<4sHHHHHHIIIHHHHHII",
                b"PK\x01\x02",
                20,
                20,
                0,
                method,
                0,
                0,
                crc,
                len(data),
                declared,
                len(raw_name),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + raw_name
        )
    count = len(members)
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, count, count, len(central), len(out), 0)
    return bytes(out + central + end)


def _stored(name: str, value: Any) -> tuple[str, int, bytes, int, int]:
    data = json.dumps(value).encode()
    return (name, 0, data, len(data), zlib.crc32(data))


def attachment_eval(path: Path) -> Path:
    """A ``.eval`` (deflated sample, ~5 KB) whose 1 MiB attachment is referenced 20,000 times: 20 GB put back."""
    sample = json.dumps(_attachment_sample()).encode()
    deflater = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    packed = deflater.compress(sample) + deflater.flush()
    name = "samples/1_epoch_1.json"
    path.write_bytes(
        _zip([_stored("header.json", HEADER), (name, 8, packed, len(sample), zlib.crc32(sample))])
    )
    return path


def attachment_json(path: Path) -> Path:
    """The same attachment bomb as a plain JSON Inspect log (~1.4 MB on disk)."""
    path.write_text(json.dumps({**HEADER, "samples": [_attachment_sample()]}), encoding="utf-8")
    return path


def zstd_size_zero_eval(path: Path, expanded: int = 256 * 2**20) -> Path:
    """A ``.eval`` whose Zstandard sample member declares size 0 and holds ``expanded`` bytes (default 256 MiB)."""
    compressor = zstandard.ZstdCompressor(level=19, write_content_size=False)
    chunk = b" " * 2**20
    writer = compressor.compressobj()
    packed = b"".join(writer.compress(chunk) for _ in range(expanded // len(chunk))) + writer.flush()
    path.write_bytes(
        _zip([_stored("header.json", HEADER), ("samples/1_epoch_1.json", ZSTD_METHOD, packed, 0, 0)])
    )
    return path


def gzip_cassette(path: Path, bodies: int = 40, size: int = 32 * 2**20) -> Path:
    """A VCR cassette of ``bodies`` responses, each a gzip body that inflates to ``size`` bytes (exactly the per-body cap)."""
    body = base64.b64encode(gzip.compress(b" " * size, compresslevel=9)).decode()
    request = json.dumps(
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "Add two numbers."}],
        }
    )
    interaction = (
        "- request:\n    method: POST\n    uri: https://api.anthropic.com/v1/messages\n"
        f"    body: {json.dumps(request)}\n"
        "  response:\n    status: {code: 200, message: OK}\n    headers: {Content-Encoding: [gzip]}\n"
        f"    body:\n      string: !!binary |\n        {body}\n"
    )
    path.write_text("interactions:\n" + interaction * bodies + "version: 1\n", encoding="utf-8")
    return path


def good_trace(path: Path) -> Path:
    """A clean two-step trace the batch must judge whatever lies beside it."""
    path.write_text(
        json.dumps(
            {
                "id": "good",
                "messages": [
                    {"role": "user", "content": "Add two numbers."},
                    {"role": "assistant", "name": "coder", "content": "def add(a, b): return a - b"},
                ],
            }
        ),
        encoding="utf-8",
    )
    return path


def build_all(folder: Path) -> dict[str, Path]:
    """The four bombs and the good trace in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    return {
        "attachment_eval": attachment_eval(folder / "attachments.eval"),
        "attachment_json": attachment_json(folder / "attachments.json"),
        "zstd_eval": zstd_size_zero_eval(folder / "zstd_size_zero.eval"),
        "cassette": gzip_cassette(folder / "cassette.yaml"),
        "good": good_trace(folder / "good.json"),
    }
