"""The checked-in layout corpora (TOML claims), shipped in the wheel as package data.

Read them with ``importlib.resources.files("layoutverify.corpora")``; ``atlas/`` holds the
fragment-atlas claims.
"""
