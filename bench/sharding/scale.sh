#!/usr/bin/env bash
# Models that only component sharding makes practical, on 4 ranks (mixle launch, gloo):
#   diag: gaussian_diag K=100000 D=16 on 100000 rows;
#   full: gaussian_full K=10000 D=64 on ROWS_FULL rows (default 20000).
# Each case runs twice: "sharded" with a --resources file of 4 CPU devices whose memory_bytes
# cannot hold the whole model (the run chooses the component split itself, as `mixle plan
# --shard-components` prints it), and "replicated" (4 data-parallel ranks, --shard-components 1,
# no resources) where the whole model fits this machine.
# --timeout 900: initialisation (k-means++ over K centres, then one assignment pass) runs on the
# ranks holding rows while the others wait at the next collective, longer than the 60 s default.
# Usage: bench/sharding/scale.sh [MIXLE] [diag|full|both] [ITERS] [ROWS_FULL]
# Prints, per run, mixle plan's table, the fit's summary lines (seconds per EM iteration,
# placement, resident bytes per rank, collective bytes), and each rank's peak RSS (KiB).
set -euo pipefail
MIXLE=$(realpath "${1:-build/rel/bin/mixle}")
CASES=${2:-both}
ITERS=${3:-2}
ROWS_FULL=${4:-20000}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

# truth.json: K0 well-separated components in D dimensions (means ~ N(0, 3²), variances U(0.5, 2)).
truth() {
  python3 - "$1" "$2" <<'PY'
import json, random, sys
random.seed(1)
K, D = int(sys.argv[1]), int(sys.argv[2])
json.dump({"format": "mixle-model", "version": 1, "weights": [1.0 / K] * K, "parts": [{
    "family": "gaussian_diag", "columns": [0, D],
    "mean": [[random.gauss(0, 3) for _ in range(D)] for _ in range(K)],
    "var": [[random.uniform(0.5, 2) for _ in range(D)] for _ in range(K)]}]}, open("truth.json", "w"))
PY
}

# resources.json: 4 CPU devices of MEMORY bytes each, one per global rank.
resources() {
  python3 - "$1" <<'PY'
import json, sys
print(json.dumps({"devices": [{"name": f"cpu:{r}", "kind": "cpu", "memory_bytes": int(sys.argv[1]),
                               "throughput": 1.0, "global_rank": r} for r in range(4)]}, indent=1))
PY
}

# run NAME ARGS...: one 4-rank fit; its summary lines and each rank's peak RSS.
run() {
  local name=$1
  shift
  echo "-- $name"
  if ! "$MIXLE" launch --nproc 4 -- bash -c 'exec /usr/bin/time -f "%M" -o "rss.$RANK" "$@"' _ \
      "$MIXLE" fit --max-iter "$ITERS" --tol 0 --threads 1 --timeout 900 --out model.json "$@" >fit.log 2>&1; then
    cat fit.log
    return 1
  fi
  grep -E '^(fitted|throughput|distributed:|parallel:|model parameter bytes|resident)' fit.log
  echo "peak RSS (VmHWM) per rank, KiB: $(cat rss.0) $(cat rss.1) $(cat rss.2) $(cat rss.3)"
}

# one_case LABEL FAMILY K ROWS D MEMORY
one_case() {
  local label=$1 family=$2 K=$3 rows=$4 D=$5 memory=$6
  echo "== $label: $family K=$K D=$D, $rows rows, 4 ranks; sharded devices of $memory bytes"
  truth 16 "$D"
  "$MIXLE" generate --model truth.json --rows "$rows" --seed 3 --out data.npy >/dev/null
  resources "$memory" >resources.json
  "$MIXLE" plan --data data.npy --family "$family" --components "$K" --resources resources.json \
      --shard-components
  local common=(--data data.npy --family "$family" -k "$K" --init kmeans++ --seed 5)
  run "sharded (automatic from --resources)" "${common[@]}" --resources resources.json
  run "replicated (4 data-parallel ranks)" "${common[@]}" --shard-components 1
}

if [ "$CASES" = diag ] || [ "$CASES" = both ]; then one_case diag gaussian_diag 100000 100000 16 40000000; fi
if [ "$CASES" = full ] || [ "$CASES" = both ]; then one_case full gaussian_full 10000 "$ROWS_FULL" 64 700000000; fi
