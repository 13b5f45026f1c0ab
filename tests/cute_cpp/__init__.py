"""Helpers for testing the CuTe adapter against CuTe C++ and pycute."""
