"""``layoutverify sweep SPEC.toml``: prove or analyse every point of a parameter space, on the
local cores or on a Ray cluster, into a results directory of shards (resumable).

* :mod:`.spec` reads and checks the TOML spec;
* :mod:`.space` numbers its points (groups of one tensor shape, options and element type; each
  group's layouts listed once, its points the product of its A and B layouts), so that a range of
  indices is all a worker needs;
* :mod:`.triton_space` builds Triton encoding families (blocked, nvidia_mma, dot_op, slice,
  linear) over shapes, warps, element types and Triton versions;
* :mod:`.work` evaluates a shard in a worker (each distinct layout parsed once, proofs through
  the core's batch prover) and writes its records and summary;
* :mod:`.store` is the results directory: manifest, shards, what is done;
* :mod:`.run` hands shards to a process pool (or runs them inline) and merges their summaries;
  :mod:`.cluster` does the same on Ray;
* :mod:`.golden` is the fixed sweep behind ``snapshot --sweep triton`` (golden files).
"""
