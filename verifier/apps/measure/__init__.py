"""Measuring and validating layout conversions (issue 13).

* :mod:`.suite`: the conversion pairs of ``corpora/conversion_suite.toml`` and how to build each
  one's layouts and compile case;
* :mod:`.validate`: on the CPU, compile each pair's conversion kernel with the installed Triton,
  compare the mechanism in its PTX with Triton's rules (``adapters/triton/lowering.py``), and
  execute the PTX on :mod:`layoutverify.apps.ptxsim` to check every register;
* :mod:`.kernels`, :mod:`.timing`: on a GPU, the ground-truth readback and the timing loop;
* :mod:`.report`: the results JSON and the plot.
"""
