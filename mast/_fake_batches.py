"""The files and batches endpoints of :class:`mast.testing.FakeLLMServer` (OpenAI's Batch API shape).

``POST /v1/files`` takes a JSONL request file; ``POST /v1/batches`` creates a batch over it, which
completes ``batch_delay`` seconds later (or once ``batch_hold`` is set); ``GET /v1/batches/{id}``
reports it and, once it is due, answers every line through the same responder, script and
faults as ``/v1/chat/completions``, writing an output file and an error file. ``batch_faults``
decides per item: ``"failed"`` (HTTP 500 in the error file) or ``"expired"`` (the batch ends
``expired``, the item listed as ``batch_expired`` in the error file). ``/cancel`` cancels.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web
from aiohttp.web_request import FileField

if TYPE_CHECKING:
    from mast.testing import RecordedRequest, Reply


class FakeBatchAPI:
    """Mixed into ``FakeLLMServer``: state lives there (``files``, ``batches``, ``batch_*`` options)."""

    files: dict[str, dict[str, Any]]
    batches: dict[str, dict[str, Any]]
    batch_items: list[RecordedRequest]
    batch_hits: list[str]
    batch_delay: float
    batch_hold: threading.Event | None
    batch_faults: Callable[[dict[str, Any]], str | None] | None
    _lock: threading.Lock
    _due: dict[str, float]

    # Defined by FakeLLMServer (which comes first in the method order): one way to answer a request.
    async def _choose(self, body: dict[str, Any], record: RecordedRequest) -> Reply:
        raise NotImplementedError

    def _completion_payload(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        raise NotImplementedError

    def _hit(self, request: web.Request) -> None:
        with self._lock:
            self.batch_hits.append(f"{request.method} {request.path}")

    # -- files --

    def _new_file(self, name: str, purpose: str, content: bytes) -> dict[str, Any]:
        file_id = f"file-{uuid.uuid4().hex[:20]}"
        obj = {
            "id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
            "filename": name, "purpose": purpose, "status": "processed",
        }
        self.files[file_id] = {"object": obj, "content": content}
        return obj

    async def _file_create(self, request: web.Request) -> web.Response:
        self._hit(request)
        form = await request.post()
        upload = form.get("file")
        if not isinstance(upload, FileField):
            return web.json_response({"error": {"message": "no file", "type": "invalid_request_error"}}, status=400)
        content = upload.file.read()
        return web.json_response(self._new_file(str(upload.filename), str(form.get("purpose") or "batch"), content))

    async def _file_get(self, request: web.Request) -> web.Response:
        self._hit(request)
        found = self.files.get(request.match_info["file_id"])
        if found is None:
            return _not_found("file")
        return web.json_response(found["object"])

    async def _file_content(self, request: web.Request) -> web.Response:
        self._hit(request)
        found = self.files.get(request.match_info["file_id"])
        if found is None:
            return _not_found("file")
        return web.Response(body=found["content"], content_type="application/octet-stream")

    # -- batches --

    async def _batch_create(self, request: web.Request) -> web.Response:
        self._hit(request)
        body = orjson.loads(await request.read() or b"{}")
        input_file = str(body.get("input_file_id") or "")
        if input_file not in self.files:
            return _not_found("input file")
        lines = [ln for ln in self.files[input_file]["content"].splitlines() if ln.strip()]
        batch_id = f"batch_{uuid.uuid4().hex[:20]}"
        now = int(time.time())
        batch = {
            "id": batch_id, "object": "batch", "endpoint": body.get("endpoint", "/v1/chat/completions"),
            "errors": None, "input_file_id": input_file, "completion_window": body.get("completion_window", "24h"),
            "status": "in_progress", "output_file_id": None, "error_file_id": None, "created_at": now,
            "in_progress_at": now, "expires_at": now + 86400, "completed_at": None, "failed_at": None,
            "expired_at": None, "cancelled_at": None,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "metadata": body.get("metadata") or {},
        }
        with self._lock:
            self.batches[batch_id] = batch
            self._due[batch_id] = time.monotonic() + self.batch_delay
        return web.json_response(batch)

    async def _batch_list(self, request: web.Request) -> web.Response:
        self._hit(request)
        data = sorted(self.batches.values(), key=lambda b: b["created_at"], reverse=True)
        return web.json_response({"object": "list", "data": data, "has_more": False})

    async def _batch_get(self, request: web.Request) -> web.Response:
        self._hit(request)
        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None:
            return _not_found("batch")
        held = self.batch_hold is not None and not self.batch_hold.is_set()
        if batch["status"] == "in_progress" and not held and time.monotonic() >= self._due[batch["id"]]:
            try:
                await self._run_batch(batch)
            except Exception as exc:  # a responder that raises fails the batch instead of leaving it running
                batch.update(status="failed", failed_at=int(time.time()), errors={"data": [{"message": repr(exc)}]})
        return web.json_response(batch)

    async def _batch_cancel(self, request: web.Request) -> web.Response:
        self._hit(request)
        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None:
            return _not_found("batch")
        if batch["status"] == "in_progress":
            batch.update(status="cancelled", cancelled_at=int(time.time()))
        return web.json_response(batch)

    async def _run_batch(self, batch: dict[str, Any]) -> None:
        from mast.testing import RecordedRequest

        batch["status"] = "finalizing"  # a concurrent poll must not run it twice
        outputs: list[bytes] = []
        errors: list[bytes] = []
        expired = False
        for line in self.files[batch["input_file_id"]]["content"].splitlines():
            if not line.strip():
                continue
            item = orjson.loads(line)
            body = item.get("body") or {}
            record = RecordedRequest(path=f"/v1/batches/{batch['id']}", body=body, headers={}, received_at=time.monotonic())
            self.batch_items.append(record)
            fate = self.batch_faults(body) if self.batch_faults is not None else None
            if fate == "expired":
                expired = True
                errors.append(_line(item, None, {"code": "batch_expired", "message": "not done within the window"}))
                continue
            reply = await self._choose(body, record)
            if fate == "failed" or reply.status >= 400 or reply.hang:
                status = reply.status if reply.status >= 400 else 500
                response = {"status_code": status, "body": {"error": {"message": f"fake item error {status}", "type": "fake_error"}}}
                errors.append(_line(item, response, None))
                continue
            outputs.append(_line(item, {"status_code": 200, "body": self._completion_payload(body, reply)}, None))
        now = int(time.time())
        if outputs:
            batch["output_file_id"] = self._new_file(f"{batch['id']}_output.jsonl", "batch_output", b"\n".join(outputs) + b"\n")["id"]
        if errors:
            batch["error_file_id"] = self._new_file(f"{batch['id']}_error.jsonl", "batch_output", b"\n".join(errors) + b"\n")["id"]
        batch["request_counts"] = {"total": len(outputs) + len(errors), "completed": len(outputs), "failed": len(errors)}
        batch.update(status="expired" if expired else "completed", **{"expired_at" if expired else "completed_at": now})


def _line(item: dict[str, Any], response: dict[str, Any] | None, error: dict[str, Any] | None) -> bytes:
    record = {"id": f"batch_req_{uuid.uuid4().hex[:16]}", "custom_id": item.get("custom_id"), "response": response, "error": error}
    return orjson.dumps(record)


def _not_found(what: str) -> web.Response:
    return web.json_response({"error": {"message": f"no such {what}", "type": "invalid_request_error"}}, status=404)
