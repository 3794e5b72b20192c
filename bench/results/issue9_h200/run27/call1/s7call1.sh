exec > $OUT/run.log 2>&1
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv
ldd .repro/gemv_bench | grep -i cublas
.repro/gemv_bench
