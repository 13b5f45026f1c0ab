"""Subcommands of the CLI, one module each (see :mod:`verifier.cli`)."""
