"""Translation validation of layout conversions as a Triton release compiles them (issue 22).

* :mod:`.releases`: an interpreter per Triton release (2.1 - 3.9), in its own virtual environment
  under ``~/.cache/layoutverify`` made on demand (the tests use the same mechanism);
* :mod:`.ttgir`, :mod:`.ttgir_worker`: the conversion kernel as TTGIR for releases before 3.6,
  and the worker that compiles it with any release;
* :mod:`.compile`: compiling conversion kernels (Gluon for 3.6 - 3.9, TTGIR before) with a disk
  cache;
* :mod:`.conversion`: one conversion's verdict (``layoutverify validate A B``): the PTX executed
  on :mod:`layoutverify.apps.ptxsim` for every thread, compared with ``B``;
* :mod:`.scan`: ``scan --validate``, every distinct conversion of a scan.
"""
