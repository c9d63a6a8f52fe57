#!/usr/bin/env bash
# The GPU checks of the batched engine, as one script for a short lease of a GPU machine:
#   parity    the CPU/GPU parity tests (skipped without CUDA; the TorchRL one also without
#             torchrl), the trainer's CUDA tests among them;
#   vector    benchmarks/vector_speed.py on the GPU, eager, B = 4,096 ... 4,194,304 (table, plot);
#   compiled  the same with compile=True at one large B (Inductor's Triton kernels);
#   search    benchmarks/search_speed.py with its batched rows on the GPU;
#   range     an action outside [0, 112] with validate=False;
#   arena     the batched arena on the GPU beside the same arena on that machine's CPU;
#   train     benchmarks/train_speed.py: the trainer's batched rollout and PPO update on the GPU.
# Each step has its own time limit and writes its output under $OUT.  All of them together can
# take longer than one 10-minute command: ONLY="parity train" runs those steps alone.
#
#   PYTHON=.venv/bin/python OUT=runs/gpu benchmarks/gpu_checks.sh
#   PYTHON=.venv/bin/python OUT=runs/gpu ONLY="parity train" benchmarks/gpu_checks.sh
#
# DEVICE=cpu and small SIZES, COMPILE_SIZE, ARENA_PAIRS, SEARCH_DECISIONS and TRAIN_MATCHES try the
# script itself on a machine without a GPU (the parity tests then skip).
set -u -o pipefail
PY=${PYTHON:-.venv/bin/python}
OUT=${OUT:-runs/gpu}
DEVICE=${DEVICE:-cuda}
SIZES=${SIZES:-4096 16384 65536 262144 1048576 4194304}
COMPILE_SIZE=${COMPILE_SIZE:-1048576}
ARENA_PAIRS=${ARENA_PAIRS:-20000}
CPU_ARENA_PAIRS=${CPU_ARENA_PAIRS:-1000}
SECONDS_PER_ROW=${SECONDS_PER_ROW:-2}
SEARCH_DECISIONS=${SEARCH_DECISIONS:-40}
TRAIN_MATCHES=${TRAIN_MATCHES:-4096 16384}
STEPS="parity vector compiled search range arena train"
ONLY=${ONLY:-$STEPS}
for name in $ONLY; do
    case " $STEPS " in
        *" $name "*) ;;
        *) echo "ONLY: unknown step '$name' (steps: $STEPS)"; exit 2;;
    esac
done
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"

failed=()
step() { echo; echo "== $* ($(date -u +%H:%M:%S))"; }
check() { local status=$?; [ "$status" = 0 ] || failed+=("$1 (exit $status)"); }
wanted() { case " $ONLY " in *" $1 "*) return 0;; *) return 1;; esac; }

step machine
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || true
"$PY" -c "import torch, platform; print(platform.processor() or platform.machine(), \
'torch', torch.__version__, 'CUDA', torch.version.cuda, \
torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no CUDA device')"

if wanted parity; then
step "CPU/GPU parity tests"
timeout 150 "$PY" -m pytest -q -p no:cacheprovider -o addopts= -rs \
    tests/test_batched_api.py::test_cpu_and_gpu_give_the_same_matches \
    tests/test_batched_api.py::test_on_cuda_an_action_out_of_range_is_refused_without_validate \
    tests/test_batched_compiled.py::test_compiled_on_cuda_plays_as_the_eager_cpu_engine \
    tests/test_batched_heuristic.py::test_cuda_gives_the_same_choices_as_the_cpu \
    tests/test_batched_sampling.py::test_on_cuda_only_legal_actions_are_drawn \
    tests/test_policy.py::test_shipped_policy_runs_on_cuda_with_cpu_equal_logits \
    tests/test_policy_search.py::test_the_batched_arena_on_cuda_plays_a_cpu_agent_on_a_copy \
    tests/test_torchrl_env_rollouts.py::test_cuda_device \
    tests/test_training_device.py::test_a_rollout_on_cuda_is_the_cpu_rollout \
    tests/test_training_device.py::test_training_on_cuda_writes_cpu_checkpoints_that_resume_on_either_device \
    2>&1 | tee "$OUT/parity.txt"
check "parity tests"
fi

if wanted vector; then
step "vector_speed, eager, device $DEVICE"
# shellcheck disable=SC2086  # SIZES is a list of numbers
timeout 100 "$PY" benchmarks/vector_speed.py --device "$DEVICE" --seconds "$SECONDS_PER_ROW" \
    --sizes $SIZES --plot "$OUT/vector_speed_$DEVICE.png" 2>&1 | tee "$OUT/vector_speed.txt"
check "vector_speed eager"
fi

if wanted compiled; then
step "vector_speed, compile=True, B = $COMPILE_SIZE, device $DEVICE"
timeout 130 "$PY" benchmarks/vector_speed.py --device "$DEVICE" --seconds "$SECONDS_PER_ROW" \
    --sizes "$COMPILE_SIZE" --compile 2>&1 | tee "$OUT/vector_speed_compiled.txt"
check "vector_speed compiled"
fi

if wanted search; then
step "search_speed, batched rows on $DEVICE"
timeout 150 "$PY" benchmarks/search_speed.py --device "$DEVICE" --decisions "$SEARCH_DECISIONS" \
    2>&1 | tee "$OUT/search_speed.txt"
check "search_speed on $DEVICE"
fi

if wanted range; then
step "an action outside [0, 112] with validate=False, eager, device $DEVICE"
timeout 60 "$PY" - "$DEVICE" <<'PYTHON' 2>&1 | tail -4 | tee "$OUT/out_of_range.txt"
import sys, torch
from sevenrocks_env import sevenrocks_v0
venv = sevenrocks_v0.vector_env(num_envs=8, device=sys.argv[1], validate=False)
venv.reset(seed=0)
refused = False  # what is expected: the range's ValueError, and the env still readable
try:
    venv.step(torch.full((8,), 500, device=sys.argv[1]))
    print("stepped:", venv.current_seat.tolist())
except Exception as error:
    print(type(error).__name__, str(error)[:300])
    refused = isinstance(error, ValueError) and "is not in [0, 112]" in str(error)
try:
    print("after it:", int(venv.action_mask.sum()), "legal actions")
except Exception as error:
    print("after it:", type(error).__name__, str(error)[:300])
    refused = False
sys.exit(0 if refused else 1)
PYTHON
check "out-of-range action"
fi

if wanted arena; then
step "batched arena, device $DEVICE, then cpu"
timeout 60 "$PY" benchmarks/arena_speed.py --device "$DEVICE" --pool-pairs 0 \
    --pairs "$ARENA_PAIRS" --batch 65536 2>&1 | tee "$OUT/arena_speed.txt"
check "arena on $DEVICE"
timeout 50 "$PY" benchmarks/arena_speed.py --device cpu --pool-pairs 0 \
    --pairs "$CPU_ARENA_PAIRS" 2>&1 | tee -a "$OUT/arena_speed.txt"
check "arena on cpu"
fi
if wanted train; then
: > "$OUT/train_speed.txt"  # this run's sizes, each under its step line (not an older run's)
for matches in $TRAIN_MATCHES; do
    step "train_speed, the batched rollout and PPO update on $DEVICE, $matches matches x 16 steps" \
        | tee -a "$OUT/train_speed.txt"
    timeout 120 "$PY" benchmarks/train_speed.py --engines batched --rollouts 3 \
        --set "opponents=[]" --set opponent_fraction=0 --batched-set "device=$DEVICE" \
        --batched-set "num_matches=$matches" --batched-set num_steps=16 \
        2>&1 | tee -a "$OUT/train_speed.txt"
    check "train_speed on $DEVICE, $matches matches"
done
fi
step done
if [ ${#failed[@]} -gt 0 ]; then
    printf 'failed: %s\n' "${failed[@]}"
    exit 1
fi
