#!/bin/bash
# Issue 11's GPU checks, on a machine with an NVIDIA GPU, nvcc and PyTorch but without
# apache-tvm: unpacks .gpu/ (tools/gpu/pack.sh) into /tmp/relay-site, then runs a smoke
# test, the tests marked gpu, the elementwise schedule variants (tools/gpu/probe.py),
# benchmarks/gpu.py and the operator suite on the GPU (RELAY_TEST_TARGET=cuda), and where
# tools/gpu/cutlass_probe.sh built them, the CUTLASS probes against cuBLAS. Outputs go
# to $OUT (default /tmp/relay-gpu). Time limits per part: T_DEV, T_PROBE, T_BENCH, T_OPS
# seconds; SKIP_OPS=1 leaves the operator suite out.
T0=$(date +%s)
stamp() { echo "== $1 at +$(( $(date +%s) - T0 )) s"; }
OUT=${OUT:-/tmp/relay-gpu}; mkdir -p "$OUT"
SITE=/tmp/relay-site; mkdir -p $SITE
if [ ! -f $SITE/tvm/lib/libtvm_compiler.so ]; then
  tar -xJf .gpu/ffi.tar.xz -C $SITE && tar -xJf .gpu/lark.tar.xz -C $SITE && \
  tar -xJf .gpu/tvm_py.tar.xz -C $SITE && \
  xz -d -c .gpu/comp.xz > $SITE/tvm/lib/libtvm_compiler.so || exit 1
fi
stamp unpacked
export PYTHONPATH=$SITE:$PWD RELAY_CACHE=0 PYTHONUNBUFFERED=1
cudart=$(find /usr/local/cuda*/ -name 'libcudart.so.1*' 2>/dev/null | head -1)
[ -n "$cudart" ] && export LD_LIBRARY_PATH=$(dirname "$cudart"):${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 - <<'PY' || exit 1
import numpy as np, relay
print("relay sees a GPU:", relay.gpu_available())
mod = relay.parse("def @main(%x: Tensor[(256, 384), float32], %w: Tensor[(384, 128), float32]) { nn.softmax(nn.relu(nn.matmul(%x, %w))) }")
x, w = np.ones((256, 384), np.float32), np.ones((384, 128), np.float32) / 384
got = relay.build(mod, target="cuda")(x, relay.device_put(w))
np.testing.assert_allclose(got.numpy(), relay.build(mod)(x, w), rtol=1e-5)
print("SMOKE OK")
PY
stamp smoke
# CUTLASS's Hopper GEMM against cuBLAS (through PyTorch), float16 4096^3, where
# tools/gpu/cutlass_probe.sh built the probes into .gpu/
if ls .gpu/cutlass_probe_* > /dev/null 2>&1; then
  for probe in .gpu/cutlass_probe_*; do timeout 60 "$probe" 2>&1 | tee -a "$OUT/cutlass.log"; done
  timeout 60 python3 - <<'PY' 2>&1 | tee -a "$OUT/cutlass.log"
import json, torch
a = torch.rand(4096, 4096, device="cuda", dtype=torch.float16) - 0.5
b = torch.rand(4096, 4096, device="cuda", dtype=torch.float16) - 0.5
for _ in range(5):
    a @ b.T
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
for _ in range(50):
    a @ b.T
end.record()
torch.cuda.synchronize()
ms = start.elapsed_time(end) / 50
print(json.dumps({"kernel": "torch a @ b.T (cuBLAS)", "ms": round(ms, 4), "tflops": round(2 * 4096**3 / ms / 1e9, 1)}))
PY
  stamp cutlass
fi
timeout ${T_DEV:-150} python3 -m pytest -q -p no:cacheprovider -p no:benchmark -n 8 -m gpu tests/backend 2>&1 | tee "$OUT/gpu_tests.log" | tail -30
stamp "gpu tests"
for mode in ${PROBE_ARGS:-variants}; do
  [ "$mode" = variants ] && mode=
  timeout ${T_PROBE:-80} python3 tools/gpu/probe.py $mode 2>&1 | tee -a "$OUT/probe.log"
done
stamp "probes"
timeout ${T_BENCH:-200} python3 benchmarks/gpu.py ${BENCH_ARGS:-} --json "$OUT/gpu.json" 2>&1 | tee "$OUT/bench.log"
stamp benchmarks
if [ -z "${SKIP_OPS:-}" ]; then
  RELAY_TEST_TARGET=cuda timeout ${T_OPS:-240} python3 -m pytest -v --tb=line -p no:cacheprovider \
    -p no:benchmark -n 16 --maxfail=300 tests/backend/test_lower_elemwise.py tests/backend/test_lower_nn.py \
    tests/backend/test_lower_reduce.py tests/backend/test_lower_transform.py tests/backend/test_lower_conv.py \
    tests/backend/test_lower_bitwise.py tests/backend/test_fused_programs.py > "$OUT/op_tests.log" 2>&1
  grep -E "FAILED|ERROR|passed|failed" "$OUT/op_tests.log" | grep -v PASSED | cut -c1-300 | tail -60
  stamp "operator tests"
fi
