#!/usr/bin/env bash
# Run one node's part of a Slurm job under the node agent `diag watch` (docs/live.md, "Deployment"):
#
#   srun --ntasks-per-node=1 deploy/slurm/diag-srun.sh torchrun --nnodes ... train.py ...
#
# On every node the task becomes
#
#   diag watch --job-id $SLURM_JOB_ID --node $SLURMD_NODENAME --service $DIAG_URL \
#     --log-dir $DIAG_LOG_DIR/$SLURMD_NODENAME --state-dir <node-local> -- torchrun ...
#
# so one agent per node starts torchrun, tails the per-rank logs torchrun writes into the node's log
# folder, samples stacks when the job hangs, and exits with torchrun's exit status. Signals from Slurm
# (scancel, the time limit) reach the agent, which passes them on to torchrun.
#
# The wrapper's own variables (not settings of diag serve):
#   DIAG_URL       base URL of diag serve, e.g. https://diag.example.com; unset: the agent keeps its
#                  batches in its spool and sends nothing
#   DIAG_LOG_DIR   the job's log folder, one sub-folder per node (default: $SLURM_SUBMIT_DIR/diag-logs/$SLURM_JOB_ID);
#                  on a shared file system the whole folder is a bundle for `diag diagnose` afterwards
#   DIAG_STATE_DIR the agent's spool and console folder, node-local (default: ${TMPDIR:-/tmp}/diag-watch/$SLURM_JOB_ID/<node>)
# and the agent's token, DIAG_AGENT_TOKEN (a token with the `agent` scope).
#
# torchrun takes its --log-dir and --tee from PET_LOG_DIR and PET_TEE, which this wrapper sets (unless
# they are set already); do not pass --log-dir to torchrun, or set DIAG_LOG_DIR to match it.
set -euo pipefail

if [[ $# -eq 0 ]]; then
  echo "usage: srun [...] $0 COMMAND [ARGS...]   (e.g. torchrun ... train.py)" >&2
  exit 2
fi
if [[ -z "${SLURM_JOB_ID:-}" ]]; then
  echo "$0: SLURM_JOB_ID is not set: run this inside a Slurm job (srun)" >&2
  exit 2
fi

node="${SLURMD_NODENAME:-$(hostname -s)}"
log_dir="${DIAG_LOG_DIR:-${SLURM_SUBMIT_DIR:-$PWD}/diag-logs/${SLURM_JOB_ID}}/${node}"
state_dir="${DIAG_STATE_DIR:-${TMPDIR:-/tmp}/diag-watch/${SLURM_JOB_ID}/${node}}"
mkdir -p "$log_dir" "$state_dir"

export PET_LOG_DIR="${PET_LOG_DIR:-$log_dir}"
export PET_TEE="${PET_TEE:-3}"

if [[ -z "${DIAG_URL:-}" ]]; then
  echo "$0: DIAG_URL is not set: the agent keeps its batches in $state_dir/spool" >&2
fi

# an empty --service sends nothing (the batches stay in the spool)
exec diag watch --job-id "$SLURM_JOB_ID" --node "$node" --service "${DIAG_URL:-}" \
  --log-dir "$log_dir" --state-dir "$state_dir" --log-file "$state_dir/agent.log" -- "$@"
