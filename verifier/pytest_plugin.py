"""pytest plugin (entry point ``pytest11``): layout assertions for a compiler's own test suite.

Filled in by the CI-gating work (issue 6); importing it must stay cheap and side-effect free.
"""
