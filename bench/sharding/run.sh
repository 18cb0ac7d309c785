#!/usr/bin/env bash
# Component-sharded vs replicated EM: gaussian_diag K=4096 D=32 on 2 ranks (mixle launch, gloo).
# Usage: bench/sharding/run.sh [MIXLE] [ROWS] [ITERS]   (defaults: build/shard/bin/mixle 100000 3)
# Prints, per mode, each rank's resident parameter/statistic bytes (from mixle fit), the seconds
# per EM iteration, and each rank's peak RSS (VmHWM, via /usr/bin/time -f %M).
set -euo pipefail
MIXLE=$(realpath "${1:-build/shard/bin/mixle}")
ROWS=${2:-100000}
ITERS=${3:-3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
# A 16-component truth in 32 dimensions (means ~ N(0, 3²), variances U(0.5, 2)), seeded.
python3 - <<'PY'
import json, random
random.seed(1)
K, D = 16, 32
json.dump({"format": "mixle-model", "version": 1, "weights": [1.0 / K] * K, "parts": [{
    "family": "gaussian_diag", "columns": [0, D],
    "mean": [[random.gauss(0, 3) for _ in range(D)] for _ in range(K)],
    "var": [[random.uniform(0.5, 2) for _ in range(D)] for _ in range(K)]}]}, open("truth.json", "w"))
PY
"$MIXLE" generate --model truth.json --rows "$ROWS" --seed 3 --out data.npy >/dev/null
for G in 1 2; do
  mode=$([ "$G" = 1 ] && echo "replicated (2 data-parallel ranks)" || echo "sharded (1 data group x 2 component shards)")
  echo "== $mode"
  # Each rank's /usr/bin/time writes its own file (RANK is set by mixle launch), so its line
  # cannot interleave with rank 0's output.
  "$MIXLE" launch --nproc 2 -- bash -c 'exec /usr/bin/time -f "%M" -o "rss.$RANK" "$@"' _ \
      "$MIXLE" fit --data data.npy -k 4096 --init select --init-p 1 --max-iter "$ITERS" --tol 0 \
      --threads 1 --quiet --shard-components "$G" 2>&1 |
    grep -E '^(throughput|parallel:|model parameter bytes|resident)'
  echo "rank peak RSS (VmHWM), KiB: rank 0 $(cat rss.0), rank 1 $(cat rss.1)"
done
