"""Formats: one module per kind of trace file, each a :class:`~mast.normalize.base.TraceFormat` that registers itself.

Each is also importable by its short name, ``mast.normalize.<name>``.
"""
