#!/usr/bin/env bash
# The whole-kernel validator's hardware models against an H100/H200 (issue 23):
#   tests/test_gpu_kernel_models.py compiles each corpus kernel with the machine's Triton for its
#   GPU, runs it on exact inputs and compares every stored element with the PTX machine's model
#   (wgmma descriptors and swizzles, TMA boxes and out-of-bounds fill, mma.sync/ldmatrix fragments).
#   Also the GPU ground-truth layout tests, for reference.
# Run from the repository root on the GPU machine (Python 3.12, torch, Triton preinstalled; no z3
# is needed by these tests):   bash benchmarks/device/validate_kernels_gpu.sh
# Expected: every test of test_gpu_kernel_models.py passes (9 kernels); the JUnit report and the
# log land in $OUT (or /tmp/lv-gpu when OUT is unset).
set -o pipefail
OUT=${OUT:-/tmp/lv-gpu}
mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-build-isolation --no-compile --target /tmp/lvsite . || exit 1
export PYTHONPATH=/tmp/lvsite:$PWD/tests
export PYTHONUNBUFFERED=1 TRITON_DEFAULT_FP_FUSION=1
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name(0))' | tee "$OUT/device.txt"
python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/test_gpu_kernel_models.py \
    --junitxml="$OUT/gpu_kernel_models.xml" 2>&1 | tee "$OUT/gpu_kernel_models.log"
