"""The application layer: CLI, atlas, corpus checks, snapshots, sweeps, GPU measurement, service.

Applications reach framework adapters only through :mod:`layoutverify.adapters` (the registry).
"""
