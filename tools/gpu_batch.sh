#!/usr/bin/env bash
# What the lead runs on a GPU machine (no package index there): install, then the steps named
# on the command line, each writing under $OUT. Usage: tools/gpu_batch.sh suite bench cold ...
set -u
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
export XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install --no-deps --no-build-isolation -q -e . > "$OUT/install.log" 2>&1
nvidia-smi -L > "$OUT/gpu.txt" 2>&1
source "$(dirname "$0")/deadline.sh"
for step in "$@"; do
  start=$(date +%s)
  case "$step" in
    suite) timeout 420 python3 -m pytest -q -n 12 -p no:cacheprovider \
             --deselect tests/test_packaging.py::test_wheel_installs_and_every_module_imports \
             --deselect tests/test_bench.py > "$OUT/gpu_suite.log" 2>&1 ;;
    bench) timeout 400 python3 -m bench --out "$OUT/bench" > "$OUT/bench.log" 2>&1 ;;
    cold) timeout 300 python3 -m bench.cold_start --repeats 5 > "$OUT/cold12.log" 2>&1 ;;
    cold48) timeout 500 python3 -m bench.cold_start --repeats 5 --layers 48 > "$OUT/cold48.log" 2>&1 ;;
    train) timeout 500 python3 -m bench.train --out "$OUT/train" > "$OUT/train.log" 2>&1 ;;
    vmap) timeout 300 python3 -m bench.vmap --out "$OUT/vmap" > "$OUT/vmap.log" 2>&1 ;;
    random) timeout 300 python3 -m bench.random --out "$OUT/random" > "$OUT/random.log" 2>&1 ;;
    linalg) timeout 300 python3 -m bench.linalg --out "$OUT/linalg" > "$OUT/linalg.log" 2>&1 ;;
    bits) timeout 300 python3 -m bench.random_bits --n 10000 > "$OUT/random_bits.log" 2>&1 ;;
    cnn) timeout 200 python3 tools/cnn_diag.py "$OUT/cnn_diag" > "$OUT/cnn_diag.log" 2>&1 ;;
    jax011) JAX_PLATFORMS=cpu timeout 120 python3 tools/check_jax011_names.py > "$OUT/jax011.log" 2>&1 ;;
    ulp) timeout 560 python3 -m bench.ulp_sweep --out "$OUT/ulp" > "$OUT/ulp.log" 2>&1 ;;
    profile) timeout 240 python3 -m bench.tools.step_profile --out "$OUT/profile" > "$OUT/profile.log" 2>&1 ;;
    profile2) timeout 240 python3 -m bench.tools.step_profile --batch 2 --out "$OUT/profile2" > "$OUT/profile2.log" 2>&1 ;;
    numerics) timeout 400 python3 -m bench.attention_numerics --out "$OUT/numerics" > "$OUT/numerics.log" 2>&1 ;;
    roll) timeout 200 python3 -m bench.cold_start --roll-sweep 12,24 --train --out "$OUT/roll" > "$OUT/roll.log" 2>&1 ;;
    roll48) timeout 400 python3 -m bench.cold_start --roll-sweep 48 --train --out "$OUT/roll48" > "$OUT/roll48.log" 2>&1 ;;
    attn_tests) timeout 120 python3 -m pytest -q -p no:cacheprovider tests/nn/test_attention_gpu.py tests/passes/test_fuse_attention_gpu.py tests/passes/test_split_projection.py > "$OUT/attn_tests.log" 2>&1 ;;
    rollab) timeout 150 python3 -m bench.cold_start --roll-ab --layers 12 --roll-forms "jitted layer" --pack-ab --ab-calls 30 --out "$OUT/rollab" > "$OUT/rollab.log" 2>&1 ;;
    profile8v) timeout 300 python3 -m bench.tools.step_profile --out "$OUT/profile8v" --forms "purejit,purejit remat off,purejit [TRAFFIC_WEIGHT=16.0],jax cudnn attention" > "$OUT/profile8v.log" 2>&1 ;;
    profile2v) timeout 240 python3 -m bench.tools.step_profile --batch 2 --out "$OUT/profile2v" --forms "purejit,purejit remat off,purejit [TRAFFIC_WEIGHT=16.0],jax cudnn attention" > "$OUT/profile2v.log" 2>&1 ;;
    rollab_big) timeout 150 python3 -m bench.cold_start --roll-ab --layers 12 --d 1024 --heads 16 --seq 1024 --batch 8 --dtype bfloat16 --roll-forms "jitted layer" --ab-calls 20 --out "$OUT/rollab_big" > "$OUT/rollab_big.log" 2>&1 ;;
    profilecb) XLA_FLAGS=--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,WHILE,CONDITIONAL timeout 200 python3 -m bench.tools.step_profile --out "$OUT/profilecb" --forms "purejit,jax cudnn attention" > "$OUT/profilecb.log" 2>&1 ;;
    rollabcb) XLA_FLAGS=--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,WHILE,CONDITIONAL timeout 150 python3 -m bench.cold_start --roll-ab --layers 12 --roll-forms "jitted layer" --ab-calls 30 --out "$OUT/rollabcb" > "$OUT/rollabcb.log" 2>&1 ;;
    profile3) timeout 240 python3 -m bench.tools.step_profile --out "$OUT/profile3" --forms "purejit,purejit remat off,jax cudnn attention" > "$OUT/profile3.log" 2>&1 ;;
    profile3c) timeout 300 python3 -m bench.tools.step_profile --out "$OUT/profile3c" --calls 60 --rounds 5 --forms "purejit,purejit remat off,jax cudnn attention" > "$OUT/profile3c.log" 2>&1 ;;
    profile_xla) timeout 450 python3 -m bench.tools.step_profile --out "$OUT/profile_xla" --forms 'purejit,purejit {xla_gpu_enable_triton_gemm=false},purejit {xla_gpu_triton_gemm_any=true},purejit {xla_gpu_exhaustive_tiling_search=true},purejit {xla_gpu_enable_split_k_autotuning=false},jax cudnn attention' > "$OUT/profile_xla.log" 2>&1 ;;
    profile_split) timeout 300 python3 -m bench.tools.step_profile --out "$OUT/profile_split" --forms 'purejit,purejit split off,jax cudnn attention' > "$OUT/profile_split.log" 2>&1 ;;
    profile_splitk) timeout 120 python3 -m bench.tools.step_profile --out "$OUT/profile_splitk" --rounds 5 --forms 'purejit,purejit {xla_gpu_enable_split_k_autotuning=false},jax cudnn attention' > "$OUT/profile_splitk.log" 2>&1 ;;
    rollab2) timeout 90 python3 -m bench.cold_start --roll-ab --layers 12 --roll-forms "jitted layer" --ab-calls 30 --out "$OUT/rollab2" > "$OUT/rollab2.log" 2>&1 ;;
    rollab2dsf) XLA_FLAGS=--xla_gpu_enable_dynamic_slice_fusion=true timeout 90 python3 -m bench.cold_start --roll-ab --layers 12 --roll-forms "jitted layer" --ab-calls 30 --out "$OUT/rollab2dsf" > "$OUT/rollab2dsf.log" 2>&1 ;;
    profile_lt) timeout 300 python3 -m bench.tools.step_profile --out "$OUT/profile_lt" --forms 'purejit,purejit {xla_gpu_enable_cublaslt=true},purejit remat off {xla_gpu_enable_cublaslt=true},jax cudnn attention' > "$OUT/profile_lt.log" 2>&1 ;;
    numerics32) timeout 500 python3 -m bench.attention_numerics --out "$OUT/numerics32" --seeds 32 > "$OUT/numerics32.log" 2>&1 ;;
    numerics16) timeout 500 python3 -m bench.attention_numerics --out "$OUT/numerics16" --seeds 16 > "$OUT/numerics16.log" 2>&1 ;;
    attention4096) timeout 300 python3 -m bench.attention --out "$OUT/attention" --rounds 5 --lengths 4096 > "$OUT/attention.log" 2>&1 ;;
    attention2k) timeout 200 python3 -m bench.attention --out "$OUT/attention2k" --rounds 5 --lengths 2048 > "$OUT/attention2k.log" 2>&1 ;;
    attention) timeout 200 python3 -m bench.attention --out "$OUT/attention" --rounds 5 > "$OUT/attention.log" 2>&1 ;;
    profile_s15) timeout 300 python3 -m bench.tools.step_profile --out "$OUT/profile_s15" --forms 'purejit,purejit [LAYER_NORM_PLAN=recompute],purejit [COLUMNS=product],purejit [LAYER_NORM_PLAN=recompute;COLUMNS=product],purejit {xla_disable_hlo_passes=splitk-rewriter},jax cudnn attention' > "$OUT/profile_s15.log" 2>&1 ;;
    *) echo "unknown step $step" ;;
  esac
  echo "$step: rc=$? $(( $(date +%s) - start )) s" >> "$OUT/steps.txt"
done
cat "$OUT/steps.txt"
tar czf /tmp/results.tgz -C "$OUT" . && mv /tmp/results.tgz "$OUT/"
