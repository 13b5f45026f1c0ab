"""The core layer: canonical layouts and everything that reasons about them.

Imports nothing from :mod:`layoutverify.adapters` or :mod:`layoutverify.apps`.
"""
