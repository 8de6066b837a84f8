"""Message dialects: spellings of chat messages read inside any format, registered in :mod:`mast.normalize._dialects`."""
