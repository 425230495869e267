"""Every chart of the package, drawn in one theme: :mod:`.theme` (the house theme,
:func:`~.theme.offline` for notebooks, :func:`~.theme.save` for the paper's figures) and
one module per subject: throttling (:mod:`.throttle`), reclaim stalls (:mod:`.stalls`),
shrinkers (:mod:`.shrinker`), fitted waits (:mod:`.fits`), mmtests' /proc monitors
(:mod:`.monitors`) and the models' out-of-sample validation (:mod:`.validation`)."""
