"""Bridges to other systems, each an optional extra imported only when used (``mast.integrations.ray``)."""
