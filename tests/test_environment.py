"""The conda environment and the pinned export must not drift from pyproject.toml / uv.lock."""

from __future__ import annotations

import re
import tomllib

import yaml

from tests.conftest import REPO


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _lock_versions() -> dict[str, str]:
    lock = tomllib.loads((REPO / "uv.lock").read_text())
    return {_norm(p["name"]): p["version"] for p in lock["package"] if "version" in p}


def _pins() -> dict[str, str]:
    pins = {}
    for line in (REPO / "requirements.lock.txt").read_text().splitlines():
        if m := re.match(r"([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?==([^\s;]+)", line):
            pins[_norm(m[1])] = m[2]
    return pins


def test_every_runtime_dependency_is_pinned_at_the_locked_version():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = {_norm(re.match(r"[A-Za-z0-9_.\-]+", d)[0]) for d in project["dependencies"]}
    locked, pins = _lock_versions(), _pins()
    missing = declared - pins.keys()
    assert not missing, f"run `make lock`: not in requirements.lock.txt: {sorted(missing)}"
    stale = {n: (v, locked.get(n)) for n, v in pins.items() if locked.get(n) != v}
    assert not stale, f"run `make lock`: pins differ from uv.lock: {stale}"


def test_environment_yml_installs_the_pins_and_the_package_on_the_same_python():
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python"))
    assert python.split("=")[-1] in requires  # "3.11" in "==3.11.*"
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-r requirements.lock.txt" in pip and "-e ." in pip
    assert env["channels"] == ["conda-forge"]
