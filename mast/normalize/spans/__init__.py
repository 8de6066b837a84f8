"""Span dialects: the attribute keys one tracing instrumentation writes, registered in :mod:`mast.normalize._otel_dialects`."""
