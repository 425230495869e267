"""``mmlab model MODEL ...``: what-if models fed by a real capture.

Each model's subcommand lives in its own module with ``register(subparsers)``, listed in
:data:`MODEL_COMMANDS`; the models' heavy imports (numba, SciPy) wait until one runs.
"""

from __future__ import annotations

import argparse
import importlib

__all__ = ["MODEL_COMMANDS", "register"]

MODEL_COMMANDS = ("analysis.commands.model_shrinker", "analysis.commands.model_throttle")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "model",
        help="what-if models of reclaim fed by a capture",
        description="What-if models of reclaim fed by a real capture; "
        "`mmlab model MODEL --help` describes each.",
    )
    models = p.add_subparsers(dest="model", required=True, metavar="MODEL")
    for name in MODEL_COMMANDS:
        importlib.import_module(name).register(models)
