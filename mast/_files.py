"""Opening a user's trace file as it was checked: no link swapped in between, no pipe that blocks.

``mast watch`` waits for a file to be quiet and then reads it, the hooks check a transcript and read
it later in another process, a folder walk checks that a link stays inside the folder and reads it
afterwards. Between the check and the read the file can be replaced by a symbolic link to
``/etc/passwd`` or ``~/.aws/credentials``. So the read never follows a link at the file
(``O_NOFOLLOW``), never waits on a FIFO (``O_NONBLOCK``), and checks the descriptor it opened
(``fstat``): a regular file, and the very file the check saw (device, inode, and size where the check
recorded one). Everything is then read from that descriptor (:class:`PinnedReader`), never from
the name again.

Example:
    >>> check = check_file(Path("run.json"))  # doctest: +SKIP
    >>> fd = open_checked(Path("run.json"), check)  # doctest: +SKIP
"""

from __future__ import annotations

import errno
import io
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from mast.errors import TraceFormatError

__all__ = ["FileCheck", "PinnedReader", "check_file", "open_checked"]

_FLAGS = (
    os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
)
_LINK_ERRORS = {errno.ELOOP, getattr(errno, "EMLINK", errno.ELOOP), getattr(errno, "EFTYPE", errno.ELOOP)}


@dataclass(frozen=True, slots=True)
class FileCheck:
    """What a check saw of a file, for the read to verify."""

    target: str
    """The file the read opens: the checked file itself, or the target a permitted link led to."""
    dev: int
    ino: int
    size: int | None = None
    """When set, the file must still have this size (a watched file is read once it stopped changing)."""


def check_file(path: Path, *, size: bool = False) -> FileCheck:
    """The identity of the regular file ``path`` names now (a link followed to its target).

    Raises:
        TraceFormatError: no such file, or not a regular file.
    """
    try:
        target = path.resolve(strict=True)
        seen = os.stat(target, follow_symlinks=False)
    except (OSError, RuntimeError):
        raise TraceFormatError("no such file (or a link that leads nowhere)", path=str(path)) from None
    if not stat.S_ISREG(seen.st_mode):
        raise TraceFormatError("not a regular file (a pipe, socket, device or folder)", path=str(path))
    return FileCheck(str(target), seen.st_dev, seen.st_ino, seen.st_size if size else None)


def open_checked(path: Path, check: FileCheck | None = None, *, follow: bool = False) -> int:
    """A read-only descriptor of the regular file ``path`` (``check.target`` when given), as checked.

    A symbolic link at the file is refused unless ``follow`` (a file the user named on the command
    line); with ``check``, a file that is not the one checked (another inode, another size) is
    refused too. The caller closes the descriptor.

    Raises:
        TraceFormatError: why the file is not read, in one line.
    """
    name = check.target if check is not None else str(path)
    flags = _FLAGS & ~getattr(os, "O_NOFOLLOW", 0) if follow and check is None else _FLAGS
    try:
        fd = os.open(name, flags)
    except OSError as exc:
        if exc.errno in _LINK_ERRORS:
            raise TraceFormatError(
                "replaced by a symbolic link after it was checked: not read", path=str(path)
            ) from None
        raise TraceFormatError(f"cannot be opened ({exc.strerror or exc})", path=str(path)) from None
    try:
        seen = os.fstat(fd)
        if not stat.S_ISREG(seen.st_mode):
            raise TraceFormatError("not a regular file (a pipe, socket, device or folder)", path=str(path))
        if check is not None and (seen.st_dev, seen.st_ino) != (check.dev, check.ino):
            raise TraceFormatError("replaced by another file after it was checked: not read", path=str(path))
        if check is not None and check.size is not None and seen.st_size != check.size:
            raise TraceFormatError("changed after it was checked: not read this time", path=str(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


class PinnedReader(io.RawIOBase):
    """A binary, seekable reader of an open descriptor with a position of its own (``pread``).

    Several readers of one descriptor (the head, the whole parse, a zip's members) never move each
    other's position, and none of them opens the file by its name again.
    """

    def __init__(self, fd: int) -> None:
        """Read ``fd`` from its start; the descriptor stays the caller's (closing this leaves it open)."""
        super().__init__()
        self._fd = fd
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        data = os.pread(self._fd, len(view), self._pos)
        view[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            self._pos = offset
        elif whence == io.SEEK_CUR:
            self._pos += offset
        else:
            self._pos = os.fstat(self._fd).st_size + offset
        if self._pos < 0:
            self._pos = 0
            raise OSError(errno.EINVAL, "negative seek position")
        return self._pos

    def tell(self) -> int:
        return self._pos
