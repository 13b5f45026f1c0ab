"""``layoutverify sweep SPEC.toml``: prove or analyse every point of a parameter space, on the
local cores or on a Ray cluster, streaming results into a resumable JSON-lines file.

* :mod:`.spec` reads the TOML spec and enumerates its points in groups (one tensor shape,
  options and element type per group; each group lists its layouts once and the pairs by name);
* :mod:`.triton_space` builds Triton encoding families (blocked, nvidia_mma, dot_op, slice,
  linear) over shapes, warps, element types and Triton versions;
* :mod:`.work` evaluates a chunk of points in a worker (each distinct layout parsed once,
  proofs through the core's batch prover);
* :mod:`.run` schedules chunks on a process pool or Ray, writes results and the summary.

(The fixed sweep behind ``snapshot --sweep triton`` is :mod:`layoutverify.apps.sweep`.)
"""
