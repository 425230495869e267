"""Presentation: text tables, JSON encoders, Altair charts and the ``mmlab report`` document."""
