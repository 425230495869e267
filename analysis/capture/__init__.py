"""Running a workload under memory pressure inside a memory cgroup and recording it:
the plan, cgroup, sysctls, tracefs instance, monitors and run metadata."""

from pathlib import Path

import analysis

__all__ = ["PACKAGE_PARENT"]

# The directory holding the ``analysis`` package this process runs: a checkout, or the
# site-packages of an installed wheel. The workload launcher gets it as PYTHONPATH and the
# guest (which sees the host's root over 9p) as its working directory, so both import this
# same package whether or not a checkout exists.
PACKAGE_PARENT = Path(analysis.__file__).resolve().parent.parent
