"""``mast formats``."""

from mast.cli.normalize import formats_command as command

__all__ = ["command"]
