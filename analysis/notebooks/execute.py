"""Headless notebook execution: a jupytext percent ``.py`` → executed ``.ipynb`` + ``.html``.

``make`` and ``mmlab sweep-notebook`` run every notebook through :func:`execute`, which
wraps papermill: parameters go into the cell tagged ``parameters``, and a failing cell
raises :class:`NotebookFailed` naming the notebook, the cell and its line in the ``.py``
instead of papermill's multi-screen traceback. The failed notebook is kept beside the
output as ``NAME.failed.ipynb`` so the traceback can still be read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from analysis.errors import InputError, input_file
from analysis.ingest.textfile import read_text
from analysis.outputs import staged_dir

__all__ = [
    "KERNEL_STARTS",
    "NOTEBOOK_MAX_BYTES",
    "NotebookFailed",
    "NotebookRun",
    "execute",
    "parameter_names",
]

# ANSI colour codes in IPython tracebacks; the error line must be plain text.
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# How often a kernel that never answered is started (see execute), and how it says so.
KERNEL_STARTS = 3
_NO_KERNEL = ("Kernel didn't respond", "Kernel died before replying")
# nbconvert's page caps an inline SVG at the page width but not a chart saved as an SVG
# <img> (what theme.offline() draws): one wider than the page was clipped.
_FIT_CHARTS = "<style>.jp-RenderedSVG img { max-width: 100%; height: auto; }</style>"
# A notebook is at most 150 lines of Python (README); anything this big is not one.
NOTEBOOK_MAX_BYTES = 1 << 20


def _first_line(source: str) -> str:
    """The first non-blank line of a cell's source ("" for an empty cell)."""
    return next((s for s in source.splitlines() if s.strip()), "")


class NotebookFailed(RuntimeError):
    """A cell raised: ``notebook``, 1-based ``cell`` (as in the ``.py``, parameters cell
    included), ``line`` of the cell in the ``.py`` (None if not found), the exception."""

    def __init__(self, notebook: Path, cell: int, line: int | None, error: str, source: str):
        # Every argument in args, so the exception pickles across process pools intact.
        super().__init__(notebook, cell, line, error, source)
        self.notebook, self.cell, self.line, self.error = notebook, cell, line, error
        self.source = source

    def __str__(self) -> str:
        where = f"{self.notebook}:{self.line}" if self.line else str(self.notebook)
        return (
            f"{where}: cell {self.cell} failed: {self.error}\n    {_first_line(self.source)[:70]}"
        )


@dataclass(frozen=True)
class NotebookRun:
    """One executed notebook: the source, the executed ``.ipynb`` and its ``.html``."""

    source: Path
    ipynb: Path
    html: Path
    parameters: Mapping[str, object]


def _cell_line(py_text: str, cell_source: str) -> int | None:
    """1-based line of ``cell_source``'s first code line in the jupytext ``.py``."""
    first = _first_line(cell_source)
    if not first:
        return None
    for number, line in enumerate(py_text.splitlines(), start=1):
        if line == first:
            return number
    return None


def _py_cell(executed, index: int) -> int:
    """1-based number in the ``.py`` of cell ``index`` of the executed notebook: papermill's
    injected-parameters cell is not in the ``.py``."""
    return 1 + sum(
        "injected-parameters" not in c.metadata.get("tags", []) for c in executed.cells[:index]
    )


def _source(notebook: Path) -> str:
    """The text of the jupytext ``.py`` at ``notebook``; InputError for anything else."""
    path = input_file(notebook, max_bytes=NOTEBOOK_MAX_BYTES)
    if path.suffix != ".py":
        raise InputError(path, "not a jupytext percent .py notebook (the name ends in .py)")
    return read_text(path)


def parameter_names(notebook: Path) -> list[str]:
    """Names assigned in the cell tagged ``parameters`` of a jupytext ``.py`` notebook."""
    import jupytext

    nb = jupytext.reads(_source(notebook), fmt="py")
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    if not cells:
        return []
    return re.findall(r"^(\w+)\s*=", cells[0].source, flags=re.MULTILINE)


def execute(
    notebook: Path,
    out_dir: Path,
    parameters: Mapping[str, object] | None = None,
    *,
    name: str | None = None,
    cwd: Path | None = None,
) -> NotebookRun:
    """Execute ``notebook`` (jupytext percent ``.py``) with ``parameters`` into
    ``out_dir/NAME.ipynb`` and ``out_dir/NAME.html`` (NAME defaults to the file stem).

    Raises :class:`NotebookFailed` when a cell raises, and ``ValueError`` for a parameter
    the notebook's ``parameters`` cell does not define (papermill would only warn).
    Nothing is written under ``out_dir`` unless both outputs are.
    """
    parameters = dict(parameters or {})
    known = parameter_names(notebook)
    unknown = sorted(set(parameters) - set(known))
    if unknown:
        raise ValueError(
            f"{notebook}: no parameter {', '.join(unknown)} (its parameters cell has "
            f"{', '.join(known) or 'nothing'})"
        )
    name = name or notebook.stem
    ipynb, html = out_dir / f"{name}.ipynb", out_dir / f"{name}.html"
    with staged_dir(out_dir) as stage:
        _run(notebook, stage, out_dir, name, parameters, cwd)
    # A success replaces the traceback of an earlier failure.
    (out_dir / f"{name}.failed.ipynb").unlink(missing_ok=True)
    return NotebookRun(notebook, ipynb, html, parameters)


def _run(
    notebook: Path,
    stage: Path,
    out_dir: Path,
    name: str,
    parameters: dict[str, object],
    cwd: Path | None,
) -> None:
    """Execute into ``stage``: NAME.ipynb and NAME.html, or NotebookFailed with the failed
    notebook moved beside the outputs (the one file a failure leaves, to be read)."""
    import jupytext
    import nbformat
    import papermill
    from nbconvert import HTMLExporter
    from papermill.exceptions import PapermillExecutionError

    source_nb = stage / f"{name}.src.ipynb"
    failed = stage / f"{name}.failed.ipynb"
    jupytext.write(jupytext.reads(_source(notebook), fmt="py"), source_nb)
    try:
        for attempt in range(1, KERNEL_STARTS + 1):
            try:
                papermill.execute_notebook(
                    str(source_nb),
                    str(failed),
                    parameters=parameters,
                    progress_bar=False,
                    cwd=str(cwd) if cwd else None,
                    kernel_name="python3",
                    language="python",
                )
                break
            except PapermillExecutionError:
                raise
            except RuntimeError as exc:
                # Kernels started at once can be handed the same free TCP port
                # (jupyter_client picks it before the kernel binds it): the loser never
                # answers. Nothing of the notebook ran yet, so start it again.
                if attempt == KERNEL_STARTS or not str(exc).startswith(_NO_KERNEL):
                    raise
    except PapermillExecutionError as exc:
        source = exc.source or ""
        error = _ANSI.sub("", f"{exc.ename}: {exc.evalue}")
        line = _cell_line(_source(notebook), source)
        cell = _py_cell(nbformat.read(failed, as_version=4), exc.cell_index)
        out_dir.mkdir(parents=True, exist_ok=True)
        failed.replace(out_dir / failed.name)
        raise NotebookFailed(notebook, cell, line, error, source) from None
    source_nb.unlink()
    ipynb = failed.rename(stage / f"{name}.ipynb")
    body, _ = HTMLExporter().from_notebook_node(nbformat.read(ipynb, as_version=4))
    (stage / f"{name}.html").write_text(body.replace("</head>", _FIT_CHARTS + "</head>", 1))
