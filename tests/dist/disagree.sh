#!/usr/bin/env bash
# Ranks given different training options under mpirun (`mpirun -np 1 PROGRAM A : -np 1 PROGRAM B`):
# each case must end within 60 seconds (no hang in mismatched collectives), with a non-zero status,
# with the same error on both ranks naming the option that differs, and with no run directory
# written. Options that may differ (--threads) train to the end.
#
# usage: disagree.sh EXAMPLES_DIR SCRATCH_DIR [MPIEXEC]
#   EXAMPLES_DIR  the built example programs (lm, tagger)
#   SCRATCH_DIR   a directory it may empty and use
#   MPIEXEC       the MPI launcher (default: mpiexec on PATH)
#
# Each case prints "ok: ..."; the first failure prints "FAIL: ..." with the output and exits 1.
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 EXAMPLES_DIR SCRATCH_DIR [MPIEXEC]" >&2
  exit 2
fi
examples=$1
scratch=$2
mpiexec=${3:-mpiexec}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -rf "$scratch"
mkdir -p "$scratch"
launch=("$mpiexec" --oversubscribe --bind-to none)

# A text of a few thousand words for lm.
text=$scratch/text.txt
words=(call me ishmael some years ago never mind how long precisely having little or no money)
for i in $(seq 3000); do printf '%s ' "${words[$(( (i * 7919) % ${#words[@]} ))]}"; done > "$text"

fail() {
  echo "FAIL: $*" >&2
  [[ -s $scratch/out.log ]] && tail -n 20 "$scratch/out.log" >&2
  exit 1
}

# two_ranks CASE RUN_DIR "RANK0 ARGS" "RANK1 ARGS": runs the MPMD job, bounded; its status in $status.
two_ranks() {
  local name=$1 run=$2 a=$3 b=$4
  status=0
  # shellcheck disable=SC2086  # the arguments are word lists
  timeout 60 "${launch[@]}" -np 1 $a : -np 1 $b > "$scratch/out.log" 2>&1 || status=$?
  (( status != 124 )) || fail "$name: the job still ran after 60 s (a hang)"
}

# refused CASE OPTION RUN_DIR "RANK0 ARGS" "RANK1 ARGS": the job fails, each rank names OPTION, nothing written.
refused() {
  local name=$1 option=$2 run=$3
  two_ranks "$name" "$run" "$4" "$5"
  (( status != 0 )) || fail "$name: the job ended with status 0"
  for r in 0 1; do
    grep -q "(rank $r of 2) the ranks were given different options ($option:" "$scratch/out.log" ||
      fail "$name: rank $r does not name $option"
  done
  [[ ! -e $run ]] || fail "$name: $run was written"
  ok "$name: both ranks refuse, naming $option"
}
ok() { echo "ok: $*"; }

lm=$examples/lm
tiny="--text $text --context 16 --d-model 16 --heads 2 --layers 1 --ffn-hidden 16 --batch 2 --steps 20
      --eval-every 10 --warmup 0 --no-figures --threads 1"
run=$scratch/lm
refused "lm --steps" --steps "$run" "$lm train --run $run $tiny" "$lm train --run $run ${tiny/--steps 20/--steps 21}"
refused "lm --eval-every" --eval-every "$run" "$lm train --run $run $tiny" "$lm train --run $run ${tiny/--eval-every 10/--eval-every 5}"
for option in "--lr 0.01" "--clip 0.5" "--reduce fixed" "--dropout 0.1" "--seed 2"; do
  refused "lm ${option%% *}" "${option%% *}" "$run" "$lm train --run $run $tiny" "$lm train --run $run $tiny $option"
done
refused "lm --batch" --batch "$run" "$lm train --run $run $tiny" "$lm train --run $run ${tiny/--batch 2/--batch 4}"
refused "lm --help on one rank" --help "$run" "$lm train --run $run $tiny" "$lm train --run $run $tiny --help"
refused "lm QKV_REFERENCE=1 on one rank" "the reference mode (--reference, QKV_REFERENCE)" "$run" \
  "$lm train --run $run $tiny" "env QKV_REFERENCE=1 $lm train --run $run $tiny"

tagger=$examples/tagger
small="--sentences 400 --epochs 2 --d-model 16 --ffn-width 32 --threads 1 --no-figures"
run=$scratch/tagger
refused "tagger --epochs" --epochs "$run" "$tagger train --run $run $small" "$tagger train --run $run ${small/--epochs 2/--epochs 3}"
refused "tagger --batch-size" --batch-size "$run" "$tagger train --run $run $small" "$tagger train --run $run $small --batch-size 16"

# --threads may differ: the ranks train together to the end.
run=$scratch/lm_threads
two_ranks "lm --threads" "$run" "$lm train --run $run $tiny" "$lm train --run $run ${tiny/--threads 1/--threads 2}"
(( status == 0 )) || fail "lm --threads 1 and 2: the job failed (status $status)"
[[ -f $run/last.safetensors ]] || fail "lm --threads 1 and 2: no checkpoint"
ok "lm with --threads 1 on one rank and 2 on the other trains to the end"
