"""Subcommands of the ``mmlab`` command line, one module each."""
