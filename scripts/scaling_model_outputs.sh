#!/bin/bash
# Writes every committed results/scaling_model/ output again (the .txt table, .csv and .png of each
# of its 15 predictions) from the committed step, allreduce measurements and sweeps, into OUT
# (default results/scaling_model). docs/sweeps.md explains the model and the figures.
#   scripts/scaling_model_outputs.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/scaling_model}
mkdir -p "$OUT"
STEP=results/scaling_model/resnet50_b32_1rank_1thread_layers.json
A=results/netns/allreduce
LOCAL=results/allreduce/gloo_2ranks_resnet50.json
predict() {  # NAME ARGS...: the table on stdout goes to NAME.txt, as committed
  local name=$1
  shift
  /usr/bin/python3 scripts/predict_scaling.py --step "$STEP" "$@" --out "$OUT/$name" > "$OUT/$name.txt"
}
for backend in gloo mpi; do
  for link in 1gbit 200mbit; do
    predict "resnet50_${backend}_${link}" --allreduce "$A/${backend}_2hosts_${link}.json" \
      --measured results/sweeps/netns_${link}/points/*.json
    predict "resnet50_${backend}_${link}_powersgd" --allreduce "$A/${backend}_2hosts_${link}.json" --compression powersgd \
      --measured results/sweeps/netns_${link}/points/*.json
  done
done
for compression in none bf16 powersgd; do
  predict "resnet50_gloo_10gbit_50us_${compression}" --allreduce "$A/gloo_2hosts_1gbit.json" --link 10gbit,50us \
    --compression "$compression"
done
predict resnet50_gloo_10gbit_50us_8perhost_flat --allreduce "$A/gloo_2hosts_1gbit.json" --link 10gbit,50us \
  --ranks-per-host 8 --local-allreduce "$LOCAL"
predict resnet50_gloo_10gbit_50us_8perhost_hierarchical --allreduce "$A/gloo_2hosts_1gbit.json" --link 10gbit,50us \
  --ranks-per-host 8 --local-allreduce "$LOCAL" --hierarchical
predict resnet50_gloo_100mbit_fusion0_none --allreduce "$A/gloo_2hosts_200mbit.json" --link 100mbit \
  --fusion-threshold-mb 0 --measured results/sweeps/netns_overlap_100mbit_fusion0/points/*.json
predict resnet50_gloo_100mbit_fusion0_overlap --allreduce "$A/gloo_2hosts_200mbit.json" --link 100mbit \
  --fusion-threshold-mb 0 --overlap-forward --measured results/sweeps/netns_overlap_100mbit_fusion0/points/*.json
