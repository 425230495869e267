"""Every project exception can be raised anywhere and crosses process boundaries intact.

Issue 8: ``InputError`` was a frozen dataclass, and raising it inside ``with
machine_lock(), raise_on_signals():`` ended in ``FrozenInstanceError`` because Python
assigns ``__traceback__``/``__context__`` while unwinding. Each case below did that.
"""

from __future__ import annotations

import ast
import contextlib
import pickle
import signal
from pathlib import Path

import pytest

import analysis
from analysis.capture.run import (
    Interrupted,
    MachineBusy,
    WorkloadFailed,
    machine_lock,
    raise_on_signals,
)
from analysis.errors import InputError
from analysis.notebooks.execute import NotebookFailed
from analysis.report.json_output import NonFiniteError
from analysis.stats.blocked import NoVariation

# One instance of every exception class the package defines; the discovery test below
# fails when a new one is added without an entry here.
EXAMPLES = {
    InputError: InputError("data/x/ftrace.gz", "corrupt gzip stream", 12, 4096),
    Interrupted: Interrupted(signal.SIGTERM),
    MachineBusy: MachineBusy("/run/lock/mmlab-capture.lock", "another mmlab capture (pid 7)"),
    WorkloadFailed: WorkloadFailed(Path("out/x/iter-1"), ["the command ended exit 3"]),
    NonFiniteError: NonFiniteError("$.rows[0].mean is nan: JSON has no NaN or infinity"),
    NoVariation: NoVariation(0.0, 55),
    NotebookFailed: NotebookFailed(
        Path("notebooks/01-vmstat-metrics.py"), 3, 41, "KeyError: 'x'", "frame['x']"
    ),
}


def _project_exceptions() -> set[tuple[str, str]]:
    """(module, class) of every class in analysis/ whose bases look like exceptions."""
    root = Path(analysis.__file__).parent
    found = set()
    for source in root.rglob("*.py"):
        module = ".".join(source.relative_to(root.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(base, ast.Name) and base.id.endswith(("Error", "Exception", "Interrupt"))
                for base in node.bases
            ):
                found.add((module, node.name))
    return found


def test_every_project_exception_is_covered():
    assert _project_exceptions() == {(k.__module__, k.__name__) for k in EXAMPLES}


def _fresh(kind: type) -> BaseException:
    return pickle.loads(pickle.dumps(EXAMPLES[kind]))


@pytest.mark.parametrize("kind", list(EXAMPLES), ids=lambda k: k.__name__)
def test_pickle_round_trip(kind):
    original = EXAMPLES[kind]
    copy = pickle.loads(pickle.dumps(original))
    assert type(copy) is kind
    assert copy.args == original.args
    assert str(copy) == str(original)
    assert vars(copy) == vars(original)


def test_input_error_message_names_file_line_and_offset():
    assert (
        str(EXAMPLES[InputError]) == "data/x/ftrace.gz:12 (byte offset 4096): corrupt gzip stream"
    )
    assert str(InputError("a", "b")) == "a: b"
    assert str(Interrupted(signal.SIGINT)) == "SIGINT"


@pytest.mark.parametrize("kind", list(EXAMPLES), ids=lambda k: k.__name__)
def test_raise_inside_capture_lock_and_signal_guard(kind, tmp_path):
    exc = _fresh(kind)
    with pytest.raises(kind) as info, machine_lock(tmp_path / "lock"), raise_on_signals():
        raise exc
    assert info.value is exc
    assert info.value.__traceback__ is not None
    # The guard restored the default handlers and released the lock on the way out.
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    with machine_lock(tmp_path / "lock"):
        pass


@contextlib.contextmanager
def _cleanup_raises(exc: BaseException):
    """A context manager whose own cleanup raises (so ``__context__`` gets assigned)."""
    try:
        yield
    finally:
        raise exc


@pytest.mark.parametrize("kind", list(EXAMPLES), ids=lambda k: k.__name__)
def test_raise_inside_contextmanager(kind):
    exc = _fresh(kind)
    with pytest.raises(kind) as info, contextlib.ExitStack(), contextlib.suppress(KeyError):
        raise exc
    assert info.value is exc
    second = _fresh(kind)
    with pytest.raises(kind) as info, _cleanup_raises(second):
        raise ValueError("first")
    assert info.value is second
    assert isinstance(second.__context__, ValueError)


@pytest.mark.parametrize("kind", list(EXAMPLES), ids=lambda k: k.__name__)
def test_raise_inside_generator_and_with_cause(kind):
    exc = _fresh(kind)

    def gen():
        yield 1
        raise exc

    it = gen()
    assert next(it) == 1
    with pytest.raises(kind) as info:
        next(it)
    assert info.value is exc
    thrown = _fresh(kind)
    with pytest.raises(kind) as info:
        gen().throw(thrown)
    assert info.value is thrown
    chained = _fresh(kind)
    with pytest.raises(kind) as info:
        try:
            raise OSError("disk")
        except OSError as cause:
            raise chained from cause
    assert isinstance(info.value.__cause__, OSError)
