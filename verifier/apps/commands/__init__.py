"""Subcommands of the CLI, one module each (see :mod:`layoutverify.apps.cli`)."""
