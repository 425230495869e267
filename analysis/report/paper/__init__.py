"""Generated inputs of ``papers/reclaim-throttling`` (``mmlab paper``): macros, tables, figures."""
