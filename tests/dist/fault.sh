#!/usr/bin/env bash
# The fault behaviour of a data-parallel tagger training on 2 MPI ranks:
#   1. a rank killed (SIGKILL) in the middle of an epoch, after the first epoch was saved,
#   2. ends the whole job (mpirun) within 30 seconds, with a non-zero status, and leaves no rank behind;
#   3. the run directory's checkpoint is intact: `tagger eval --run DIR` (one process) succeeds;
#   4. `tagger train --run DIR --resume` under mpirun continues the run from its last checkpoint
#      and finishes it: exit 0, and metrics.csv holds the epochs resumed.
#
# usage: fault.sh TAGGER SCRATCH_DIR [MPIEXEC]
#   TAGGER       the built tagger program
#   SCRATCH_DIR  a directory it may empty and use (the run directory and the logs)
#   MPIEXEC      the MPI launcher (default: mpiexec on PATH)
#
# Each check prints "ok: ..."; the first failure prints "FAIL: ..." (with the log's tail) and exits 1.
# Every wait is bounded, and the processes it starts are ended on exit.
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 TAGGER SCRATCH_DIR [MPIEXEC]" >&2
  exit 2
fi
tagger=$1
scratch=$2
mpiexec=${3:-mpiexec}

# Open MPI refuses to run as root unless told (CI runs as root).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

run=$scratch/run
log=$scratch/train.log
rm -rf "$scratch"
mkdir -p "$scratch"

# Few epochs, but each long enough (about a second or more) to be killed in: a resume cannot
# shorten a run (--resume --epochs below the run's epochs is refused), so the resumed part
# must be short as well.
epochs=3
train_options=(--sentences 20000 --epochs "$epochs" --d-model 32 --ffn-width 64 --threads 1 --no-figures)
launch=("$mpiexec" -np 2 --oversubscribe --bind-to none)

mpirun_pid=""

ok() { echo "ok: $*"; }

fail() {
  echo "FAIL: $*" >&2
  for f in "$log" "$scratch/eval.log" "$scratch/resume.log"; do
    if [[ -s $f ]]; then
      echo "--- last lines of $f:" >&2
      tail -n 15 "$f" >&2
    fi
  done
  exit 1
}

# The processes of this run: mpirun and its ranks, whose command lines name the run directory.
run_pids() { pgrep -f -- "--run $run " || true; }

cleanup() {
  local pid
  if [[ -n $mpirun_pid ]] && kill -0 "$mpirun_pid" 2>/dev/null; then kill -TERM "$mpirun_pid" 2>/dev/null || true; fi
  for pid in $(run_pids); do kill -KILL "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

# How many epochs metrics.csv records (its lines but the header).
epochs_saved() { echo $(( $(wc -l < "$run/metrics.csv") - 1 )); }

# wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND every 0.05 s until it succeeds; fails if
# the training ends first or SECONDS pass.
wait_for() {
  local seconds=$1 what=$2
  shift 2
  local deadline=$(( SECONDS + seconds ))
  until "$@"; do
    kill -0 "$mpirun_pid" 2>/dev/null || fail "the training ended before $what"
    (( SECONDS < deadline )) || fail "no $what after ${seconds} s"
    sleep 0.05
  done
}

# The rank to kill: rank 1 by its environment (OMPI_COMM_WORLD_RANK), else the newest rank process.
pick_victim() {
  local pid newest=""
  for pid in $(run_pids); do
    [[ $pid == "$mpirun_pid" ]] && continue
    if tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then
      echo "$pid rank 1"
      return
    fi
    if [[ -z $newest || $pid -gt $newest ]]; then newest=$pid; fi
  done
  [[ -n $newest ]] && echo "$newest newest rank process"
}

# --- 1. a 2-rank training, one rank killed in the middle of its second epoch -------------------
"${launch[@]}" "$tagger" train --run "$run" "${train_options[@]}" > "$log" 2>&1 &
mpirun_pid=$!

first_epoch_saved() { [[ -f $run/last.safetensors && -f $run/metrics.csv ]]; }
wait_for 120 "the first epoch's checkpoint ($run/last.safetensors)" first_epoch_saved
next_epoch=$(( $(epochs_saved) + 1 ))
# A progress line of the next epoch: its training has taken a step.
next_epoch_started() { grep -q "^epoch $next_epoch/$epochs [0-9]*/" "$log"; }
wait_for 60 "a progress line of epoch $next_epoch" next_epoch_started
sleep 0.2  # a moment further into the epoch

victim=$(pick_victim) || true
[[ -n $victim ]] || fail "no rank process of the run found (pgrep -f -- '--run $run ')"
read -r victim_pid victim_how <<< "$victim"
killed_at=$EPOCHREALTIME
kill -KILL "$victim_pid" || fail "could not kill the rank process $victim_pid ($victim_how)"
ok "killed pid $victim_pid ($victim_how) with SIGKILL in epoch $next_epoch of $epochs (epochs saved: $(epochs_saved))"

# --- 2. the job ends within 30 s, with a non-zero status, and no rank is left ----------------------
deadline=$(( SECONDS + 30 ))
while kill -0 "$mpirun_pid" 2>/dev/null; do
  (( SECONDS < deadline )) || fail "the job still runs 30 s after a rank was killed (a hang)"
  sleep 0.05
done
ended_at=$EPOCHREALTIME
status=0
wait "$mpirun_pid" || status=$?
mpirun_pid=""
took=$(awk -v a="$killed_at" -v b="$ended_at" 'BEGIN { printf "%.2f", b - a }')
(( status != 0 )) || fail "the job ended with status 0 although a rank was killed"
ok "the job ended ${took} s after the kill, with status $status"

left=$(run_pids)
for _ in $(seq 50); do  # up to 5 s for the last processes to go
  [[ -z $left ]] && break
  sleep 0.1
  left=$(run_pids)
done
[[ -z $left ]] || fail "rank processes of the run outlived the job: $(echo $left)"
ok "no rank process outlived the job"

# --- 3. the last checkpoint is intact: eval reads the run in one process ---------------------------
done_epochs=$(epochs_saved)
(( done_epochs >= 1 )) || fail "metrics.csv records no epoch after the kill"
if ! timeout 120 "$tagger" eval --run "$run" > "$scratch/eval.log" 2>&1; then
  fail "tagger eval --run $run failed after the kill"
fi
ok "tagger eval --run reads the run (${done_epochs} epoch(s) saved)"

# --- 4. resume under mpirun finishes the run --------------------------------------------------------
# --epochs may extend a run but not shorten it: the run's own epochs, or one more than saved.
resume_epochs=$(( done_epochs + 1 > epochs ? done_epochs + 1 : epochs ))
if ! timeout 120 "${launch[@]}" "$tagger" train --run "$run" --resume --epochs "$resume_epochs" --threads 1 \
     --no-figures > "$scratch/resume.log" 2>&1; then
  fail "the resume (tagger train --run $run --resume --epochs $resume_epochs under mpirun) failed"
fi
after=$(epochs_saved)
(( after == resume_epochs )) ||
  fail "metrics.csv holds $after epochs after resuming to $resume_epochs (from $done_epochs)"
ok "resume under mpirun ran epochs $(( done_epochs + 1 ))..$resume_epochs; metrics.csv holds $after epochs"
