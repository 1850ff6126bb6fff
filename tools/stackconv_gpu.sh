#!/usr/bin/env bash
set -u
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
export XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -m pip install --no-deps --no-build-isolation -q -e . > "$OUT/install.log" 2>&1
source tools/deadline.sh
BASE=${BASE:-$PWD/base_0172bef}  # a git archive of 0172bef (untracked): the tree before session 18
run() { local name=$1; shift; local s=$(date +%s); timeout "$@" > "$OUT/$name.log" 2>&1; echo "$name: rc=$? $(( $(date +%s) - s )) s" | tee -a "$OUT/steps.txt"; }
run tests 120 python3 -m pytest -q -p no:xdist -p no:cacheprovider tests/backend/test_row_views.py tests/compiler/test_stacked_params.py tests/compiler/test_lazy_rows.py tests/passes/test_roll_layers_first_call.py
run routes 90 python3 -m bench.tools.stack_routes --layers 48 --d 128
run rollab 200 python3 -m bench.cold_start --roll-ab --layers 12 --roll-forms "jitted layer" --ab-calls 30 --d 1024 --heads 16 --seq 1024 --batch 8 --dtype bfloat16
run cold48 150 python3 -m bench.tools.cold_start_ab --base $BASE --layers 48 --rounds 3 --variants "base rolled,purejit rolled,jax.jit scan,jax.jit unrolled"
run cold48t 200 python3 -m bench.tools.cold_start_ab --base $BASE --layers 48 --rounds 2 --train --variants "base rolled,purejit rolled,jax.jit scan"
run cold12 120 python3 -m bench.tools.cold_start_ab --base $BASE --layers 12 --rounds 2 --variants "purejit rolled,jax.jit scan,jax.jit unrolled"
run cold12t 150 python3 -m bench.tools.cold_start_ab --base $BASE --layers 12 --rounds 2 --train --variants "purejit rolled,jax.jit scan,jax.jit unrolled"
cd "$OUT" && tar czf results.tgz *.log steps.txt
