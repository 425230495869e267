"""Presentation: every table goes through :mod:`.table` (plain text, 80 columns, footnotes)
and every ``--json`` through :mod:`.json_output`; one module per subject holds its text and
JSON forms (:mod:`.ops`, :mod:`.trace_analysis`, :mod:`.accounting`, :mod:`.capture`), with
Altair charts in :mod:`.charts` and the ``mmlab report`` document in :mod:`.document`."""
