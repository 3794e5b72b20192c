exec > $OUT/run.log 2>&1
.repro/mlp_probe
