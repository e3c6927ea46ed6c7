"""``dse explore``: the interactive design explorer (``state`` computes what a page shows, ``app`` serves it)."""
