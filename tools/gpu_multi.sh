#!/usr/bin/env bash
# The lead's multi-GPU batch (no package index there): install, then the many-GPU benches of
# issue #31, each writing under $OUT, and one tarball of everything at the end.
# Usage: tools/gpu_multi.sh train sweep ...
set -u
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
export XLA_PYTHON_CLIENT_PREALLOCATE=false NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 -m pip install --no-deps --no-build-isolation -q -e . > "$OUT/install.log" 2>&1
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
N=$(nvidia-smi -L | wc -l)
source "$(dirname "$0")/deadline.sh"
for step in "$@"; do
  start=$(date +%s)
  case "$step" in
    train) timeout 300 python3 -m bench.tp_train --out "$OUT/train" --devices "$N" --variants jax_cudnn \
             --steps single,dp,tp,fsdp,fsdp_jit --repeats 3 --hlo --profile > "$OUT/train.log" 2>&1 ;;
    train4) timeout 300 python3 -m bench.tp_train --out "$OUT/train4" --devices "$N" --variants jax_cudnn \
             --steps single,dp,tp,fsdp --repeats 3 > "$OUT/train4.log" 2>&1 ;;
    train4b)  # one process per step, so a slow compile (JAX's hand-written step took 136 s on
              # 4 H100s) costs that step's row only; each writes its own folder
      for kind in dp fsdp tp fsdp_jit; do
        timeout 200 python3 -m bench.tp_train --out "$OUT/train4b_$kind" --devices "$N" \
          --variants jax_cudnn,jax,purejit_remat_off --steps "$kind" --repeats 3 \
          > "$OUT/train4b_$kind.log" 2>&1
        echo "train4b $kind: rc=$?" >> "$OUT/steps.txt"
      done ;;
    train4c)  # dp, fsdp and tp, one process each, against JAX + cuDNN only (JAX's hand-written
              # step compiles for minutes on 4 GPUs), with remat off beside the default
      for kind in dp fsdp tp; do
        timeout 170 python3 -m bench.tp_train --out "$OUT/train4c_$kind" --devices "$N" \
          --variants jax_cudnn,purejit_remat_on --steps "$kind" --repeats 3 --profile \
          > "$OUT/train4c_$kind.log" 2>&1
        echo "train4c $kind: rc=$?" >> "$OUT/steps.txt"
      done ;;
    train4d)  # the default (now remat off over several devices) against the plan forced on
      for kind in dp fsdp tp; do
        timeout 130 python3 -m bench.tp_train --out "$OUT/train4d_$kind" --devices "$N" \
          --variants jax_cudnn,purejit_remat_on --steps "$kind" --repeats 3 \
          > "$OUT/train4d_$kind.log" 2>&1
        echo "train4d $kind: rc=$?" >> "$OUT/steps.txt"
      done ;;
    train4e)  # after the C++ dispatch of SPMD programs: the default against JAX + cuDNN
      for kind in dp fsdp tp; do
        timeout 100 python3 -m bench.tp_train --out "$OUT/train4e_$kind" --devices "$N" \
          --variants jax_cudnn --steps "$kind" --repeats 3 > "$OUT/train4e_$kind.log" 2>&1
        echo "train4e $kind: rc=$?" >> "$OUT/steps.txt"
      done ;;
    weak4)  # weak scaling at n = 4 under XLA scheduling flags (JAX and purejit alike): the
            # latency-hiding scheduler, then with it smaller combined collectives
      i=0
      for flags in "--xla_gpu_enable_latency_hiding_scheduler=true" \
          "--xla_gpu_enable_latency_hiding_scheduler=true --xla_gpu_all_reduce_combine_threshold_bytes=16777216 --xla_gpu_all_gather_combine_threshold_bytes=16777216 --xla_gpu_reduce_scatter_combine_threshold_bytes=16777216"; do
        i=$((i+1))
        echo "weak4_$i: $flags" >> "$OUT/steps.txt"
        XLA_FLAGS="$flags" timeout 150 python3 -m bench.tp_train --out "$OUT/weak4_$i" --devices "$N" \
          --variants jax_cudnn --steps dp,fsdp --repeats 3 > "$OUT/weak4_$i.log" 2>&1
        echo "weak4_$i: rc=$?" >> "$OUT/steps.txt"
      done ;;
    tp4h)  # the tensor-parallel step with its compiled HLO and every kernel, to match fusions
      timeout 150 python3 -m bench.tp_train --out "$OUT/tp4h" --devices "$N" --variants jax_cudnn \
        --steps tp --repeats 3 --hlo --profile > "$OUT/tp4h.log" 2>&1 ;;
    cb4)  # collectives inside XLA's command buffers (CUDA graphs), both libraries: host time
      for kind in tp dp; do
        XLA_FLAGS="--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,COLLECTIVES" \
          timeout 120 python3 -m bench.tp_train --out "$OUT/cb4_$kind" --devices "$N" \
          --variants jax_cudnn --steps "$kind" --repeats 3 > "$OUT/cb4_$kind.log" 2>&1
        echo "cb4 $kind: rc=$?" >> "$OUT/steps.txt"
      done ;;
    cb4p)  # collectives inside XLA's command buffers for purejit's programs alone
      for kind in tp dp; do
        PUREJIT_XLA_OPTIONS="xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,COLLECTIVES;" \
          timeout 120 python3 -m bench.tp_train --out "$OUT/cb4p_$kind" --devices "$N" \
          --variants jax_cudnn --steps "$kind" --repeats 3 > "$OUT/cb4p_$kind.log" 2>&1
        echo "cb4p $kind: rc=$?" >> "$OUT/steps.txt"
      done ;;
    sweept)  # auto by timing the candidates: every shape of issue #31, n = 4 first
      timeout 520 python3 -m bench.tp_mlp_sweep --out "$OUT/sweept" --devices "$N",2 --iters 50 \
        --repeats 5 --timeout 90 \
        --shapes 16384x2048,4096x2048,2048x2048,8192x2048,8192x8192,2048x8192,16384x8192 \
        > "$OUT/sweept.log" 2>&1
      python3 -m bench.tools.tp_mlp_fit "$OUT/sweept" > "$OUT/fitt.log" 2>&1 ;;
    chunk2|chunk4)  # the chunked-collectives form (passes/_chunked.py) beside off / ring / auto /
                    # JAX: the communication-heavy shape first, n = 2 (chunk2) or every GPU
      n=2; [ "$step" = chunk4 ] && n="$N"
      timeout 500 python3 -m bench.tp_mlp_sweep --out "$OUT/$step" --devices "$n" --iters 50 \
        --repeats 5 --timeout 170 --forms chunked2,chunked4,chunked4_free,pipelined2,pipelined4 \
        --shapes 16384x2048,8192x2048,4096x2048,16384x8192 > "$OUT/$step.log" 2>&1 ;;
    chunku)  # auto as merged (branch cmerge): each timing unit as written against both rings,
             # both chunked2 and both chunked4, n = 2; per row what it chose, per unit the four
             # times and the deciding seconds, against every forced form
      timeout 500 python3 -m bench.tp_mlp_sweep --out "$OUT/chunku" --devices 2 --iters 50 \
        --repeats 5 --timeout 150 --shapes 16384x2048,4096x2048,8192x2048,8192x8192 \
        > "$OUT/chunku.log" 2>&1 ;;
    chunk2lhs)  # the same at n = 2 with XLA's latency-hiding scheduler on purejit's programs only
      PUREJIT_XLA_OPTIONS="xla_gpu_enable_latency_hiding_scheduler=true" \
        timeout 400 python3 -m bench.tp_mlp_sweep --out "$OUT/chunk2lhs" --devices 2 --iters 50 \
        --repeats 5 --timeout 170 --forms chunked2,chunked4,chunked4_free,pipelined2,pipelined4 --shapes 16384x2048,8192x2048 \
        > "$OUT/chunk2lhs.log" 2>&1 ;;
    fsdpjit)  # FSDP through jit with shardings, attention per device (passes/attention_sharding.py)
      timeout 150 python3 -m bench.tp_train --out "$OUT/fsdpjit" --devices "$N" \
        --variants jax_cudnn,purejit_unfused --steps fsdp_jit --repeats 3 --hlo > "$OUT/fsdpjit.log" 2>&1 ;;
    sweepb)  # auto by timing whole shard_map bodies: the rows the candidate timing missed
      timeout 290 python3 -m bench.tp_mlp_sweep --out "$OUT/sweepb" --devices "$N",2 --iters 50 \
        --repeats 5 --timeout 90 --shapes 16384x2048,2048x2048,8192x8192,16384x8192 \
        > "$OUT/sweepb.log" 2>&1
      python3 -m bench.tools.tp_mlp_fit "$OUT/sweepb" > "$OUT/fitb.log" 2>&1 ;;
    cold48g)  # issue #32 on one GPU: the 48-layer forward's first call, fresh processes
      CUDA_VISIBLE_DEVICES=0 timeout 130 python3 -m bench.cold_start --roll-sweep 48 --repeats 1 \
        --out "$OUT/cold48g" > "$OUT/cold48g.log" 2>&1 ;;
    cold48x)  # issue #32 on one GPU: where XLA's GPU compile of the 48-layer forward goes; each
              # variant's cold child (d=128, 4 heads, seq 64, batch 2: cold_start_ab's model)
              # as is, without autotuning, and with XLA's compile-phase timers logged
      mkdir -p "$OUT/cold48x"
      for v in 0 1 2 3; do
        for mode in plain noautotune vlog; do
          cache=$(mktemp -d)
          case $mode in
            plain) envs="" ;;
            noautotune) envs="XLA_FLAGS=--xla_gpu_autotune_level=0" ;;
            vlog) envs="TF_CPP_MIN_LOG_LEVEL=0 TF_CPP_VMODULE=gpu_compiler=1,nvptx_compiler=1,hlo_pass_pipeline=1,compile_module_to_llvm_ir=1,gemm_fusion_autotuner=1,autotuner_util=1" ;;
          esac
          env CUDA_VISIBLE_DEVICES=0 $envs timeout 60 python3 -c "import runpy, sys; sys.argv[0] = 'bench/cold_start.py'; runpy.run_path(sys.argv[0], run_name='__main__')" \
            --child "$([ $v -le 1 ] && echo purejit || echo jax)" --cache "$cache" --variant $v \
            --purejit-options '{}' --layers 48 --d 128 --heads 4 --seq 64 --batch 2 \
            > "$OUT/cold48x/v${v}_$mode.out" 2> "$OUT/cold48x/v${v}_$mode.err"
          echo "cold48x v$v $mode rc=$? $(grep RESULT "$OUT/cold48x/v${v}_$mode.out" | head -c 600)" >> "$OUT/steps.txt"
          gzip -f "$OUT/cold48x/v${v}_$mode.err"
        done
      done ;;
    sweepu)  # auto by timing units (a candidate with its elementwise neighbourhood; the MLP's
             # all-gather and reduce-scatter as one), against each candidate timed alone
      timeout 300 python3 -m bench.tp_mlp_sweep --out "$OUT/sweepu" --devices 2 --iters 50 \
        --repeats 5 --timeout 120 --shapes 16384x2048,4096x2048,8192x8192 --auto-alone \
        > "$OUT/sweepu.log" 2>&1 ;;
    stackc)  # issue #32: XLA's GPU compile of stacking 48 layers' parameters, by form
      CUDA_VISIBLE_DEVICES=0 timeout 150 python3 -m bench.tools.stack_compile --repeats 2 \
        > "$OUT/stackc.log" 2>&1 ;;
    attn4096)  # issue #30: bench.attention at T = 4096 (the forward's timing loop was fixed)
      CUDA_VISIBLE_DEVICES=0 timeout 300 python3 -m bench.attention --out "$OUT/attention" \
        --rounds 5 --lengths 4096 > "$OUT/attention.log" 2>&1 ;;
    rollprof)  # issue #32 on one GPU: kernels and device time per step of the rolled training
               # step against the unrolled one on bench.train's model (bf16), with the GPU HLO
      CUDA_VISIBLE_DEVICES=0 timeout 240 python3 -m bench.tools.roll_profile --out "$OUT/rollprof" \
        --layers 12 --d 1024 --heads 16 --seq 1024 --batch 8 --dtype bfloat16 --steps 10 \
        --forms "purejit unrolled,purejit rolled packed,purejit rolled unpacked" \
        > "$OUT/rollprof.log" 2>&1 ;;
    hostloop)  # issue #32 on one GPU: a layer's forward and backward as programs of their own,
               # chained by the host, against the unrolled and rolled steps (fresh processes)
      CUDA_VISIBLE_DEVICES=0 timeout 200 python3 -m bench.tools.host_loop --out "$OUT/hostloop12" \
        --layers 12 > "$OUT/hostloop12.log" 2>&1
      CUDA_VISIBLE_DEVICES=0 timeout 250 python3 -m bench.tools.host_loop --out "$OUT/hostloop48" \
        --layers 48 --forms "purejit host loop,purejit rolled,purejit unrolled" \
        > "$OUT/hostloop48.log" 2>&1 ;;
    rollflags)  # issue #32: the rolled step's row copies under XLA's dynamic-slice fusion, with
                # the dots as Triton/cuBLASLt (default) and as legacy cuBLAS gemms it can take
      for i in 1 2; do
        case $i in
          1) flags="--xla_gpu_enable_dynamic_slice_fusion=true" ;;
          2) flags="--xla_gpu_enable_dynamic_slice_fusion=true --xla_gpu_enable_triton_gemm=false --xla_gpu_enable_cublaslt=false" ;;
        esac
        echo "rollflags_$i: $flags" >> "$OUT/steps.txt"
        XLA_FLAGS="$flags" CUDA_VISIBLE_DEVICES=0 timeout 150 python3 -m bench.tools.roll_profile \
          --out "$OUT/rollflags_$i" --layers 12 --d 1024 --heads 16 --seq 1024 --batch 8 \
          --dtype bfloat16 --steps 10 --forms "purejit unrolled,purejit rolled packed" \
          > "$OUT/rollflags_$i.log" 2>&1
      done ;;
    attncheck)  # the XLA-path attention's dot algorithm and grouped layout (branch attngrad) on
                # a GPU: its tests, then the numerics contract over 4 seeds
      CUDA_VISIBLE_DEVICES=0 timeout 200 python3 -m pytest -q -p no:xdist tests/nn/test_attention_gpu.py \
        tests/nn/test_attention.py tests/lax/test_dot_algorithm.py > "$OUT/attncheck_tests.log" 2>&1
      CUDA_VISIBLE_DEVICES=0 timeout 150 python3 -m bench.attention_numerics --out "$OUT/attncheck_numerics" \
        --seeds 4 > "$OUT/attncheck_numerics.log" 2>&1 ;;
    sweep4r)  # issue #31 at n = 4: the four shapes session 19 did not reach, every form
      timeout 300 python3 -m bench.tp_mlp_sweep --out "$OUT/sweep4r" --devices "$N" --iters 50 \
        --repeats 5 --timeout 100 --shapes 2048x2048,8192x2048,2048x8192,16384x8192 \
        > "$OUT/sweep4r.log" 2>&1 ;;
    prof4|prof2)  # the communication-heavy shape's kernels per GPU: how much collective time
                  # each form runs beside compute (bench.tools.overlap_profile), with its HLO
      n=2; [ "$step" = prof4 ] && n="$N"
      timeout 150 python3 -m bench.tp_mlp --tokens 16384 --dmodel 2048 --dff 8192 --devices "$n" \
        --repeats 5 --forms chunked2,chunked4,pipelined4 --profile "$OUT/$step" \
        --json "$OUT/$step/tp_mlp.json" > "$OUT/$step.log" 2>&1 ;;
    train4f)  # tp and FSDP through jit at n = 4, against JAX + cuDNN, with fused attention off
      for kind in tp fsdp_jit; do
        timeout 150 python3 -m bench.tp_train --out "$OUT/train4f_$kind" --devices "$N" \
          --variants jax_cudnn,purejit_unfused --steps "$kind" --repeats 3 > "$OUT/train4f_$kind.log" 2>&1
        echo "train4f $kind: rc=$?" >> "$OUT/steps.txt"
      done ;;
    weak32)  # weak scaling with bench.train's batch per GPU (8; global 8n), dp and FSDP
      timeout 200 python3 -m bench.tp_train --out "$OUT/weak32" --devices "$N" --batch $((8 * N)) \
        --variants jax_cudnn --steps dp,fsdp --repeats 3 > "$OUT/weak32.log" 2>&1 ;;
    fsdpjit4h)  # FSDP through jit with its compiled HLO and kernels, against JAX + cuDNN
      timeout 150 python3 -m bench.tp_train --out "$OUT/fsdpjit4h" --devices "$N" --variants jax_cudnn \
        --steps fsdp_jit --repeats 3 --hlo --profile > "$OUT/fsdpjit4h.log" 2>&1 ;;
    hostroute)  # issue #32 on one GPU: the compiler's host route (roll_layers="host") beside the
                # unrolled, rolled and hand-written host-loop steps; its tests and the attention
                # tests on the GPU first
      CUDA_VISIBLE_DEVICES=0 timeout 200 python3 -m pytest -q -p no:xdist tests/compiler/test_host_loop.py \
        tests/nn/test_attention_gpu.py tests/nn/test_attention.py tests/lax/test_dot_algorithm.py \
        > "$OUT/hostroute_tests.log" 2>&1
      echo "hostroute tests: rc=$? $(tail -1 "$OUT/hostroute_tests.log")" >> "$OUT/steps.txt"
      for L in 12 48; do
        CUDA_VISIBLE_DEVICES=0 timeout 200 python3 -m bench.tools.host_loop --out "$OUT/hostroute$L" \
          --layers $L --forms "purejit host route,purejit host loop,purejit rolled,purejit unrolled" \
          > "$OUT/hostroute$L.log" 2>&1
        echo "hostroute $L: rc=$?" >> "$OUT/steps.txt"
      done ;;
    hostcb)  # the host forms without XLA's command buffers (each run's buffers are new)
      XLA_FLAGS=--xla_gpu_enable_command_buffer= CUDA_VISIBLE_DEVICES=0 timeout 120 \
        python3 -m bench.tools.host_loop --out "$OUT/hostcb12" --layers 12 \
        --forms "purejit host route,purejit host loop,purejit unrolled" > "$OUT/hostcb12.log" 2>&1 ;;
    sweep2r)  # auto with its default forms (the ring alone) at n = 2, every shape of issue #31
      timeout 400 python3 -m bench.tp_mlp_sweep --out "$OUT/sweep2r" --devices 2 --iters 50 \
        --repeats 5 --timeout 90 \
        --shapes 16384x2048,4096x2048,8192x8192,2048x2048,8192x2048,2048x8192,16384x8192 \
        > "$OUT/sweep2r.log" 2>&1 ;;
    sweep) timeout 250 python3 -m bench.tp_mlp_sweep --out "$OUT/sweep" --devices 2,"$N" --iters 20 \
             --repeats 5 --timeout 60 > "$OUT/sweep.log" 2>&1
           python3 -m bench.tools.tp_mlp_fit "$OUT/sweep" --rows > "$OUT/fit.log" 2>&1 ;;
    *) echo "unknown step $step" ;;
  esac
  echo "$step: rc=$? $(( $(date +%s) - start )) s" >> "$OUT/steps.txt"
done
cat "$OUT/steps.txt"
tar czf /tmp/results.tgz -C "$OUT" . && mv /tmp/results.tgz "$OUT/"
