"""Framework logs: text a framework prints, each a :class:`~mast.normalize._logs_common.FrameworkLog` that registers itself.

Read on their own by the ``framework_log`` format and inside MAD records by :mod:`mast.normalize._mad_logs`.
"""
