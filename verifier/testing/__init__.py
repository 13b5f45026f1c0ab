"""What the tests and benchmarks share and the tool itself never uses: the brute-force verdict
oracle (:mod:`.brute`) and seeded generators of layouts (:mod:`.random_layouts`).

Imports only :mod:`layoutverify.core` (checked by ``tests/test_architecture.py``).
"""
