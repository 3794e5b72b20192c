#!/bin/bash
# Run 47 call 7 (the session's last ~2 device minutes, warm after call 6): the full-size pi0.5 graph
# at this session's final code, its bag report's stage timings with the layered head's backbone
# part kept apart. Sent as one command line:
mkdir -p $OUT; . /tmp/edgevla-env.sh; E=/tmp/b/bin/edgevla; (time $E model init --config pi05 --dtype bf16 --seed 0 --out /tmp/pi05 > /dev/null 2>&1) 2>&1 | tail -3; EDGEVLA_CHECKPOINT=/tmp/pi05 EDGEVLA_RUN_DIR=/tmp/rf timeout 30 $E launch launch/pi05_cuda.yaml --duration 10 > $OUT/launch_full.txt 2>&1; $E bag report /tmp/rf/pi05_cuda.mcap > $OUT/report_full.txt 2>&1; grep -E "compute|camera -> actuation|framework overhead" $OUT/report_full.txt | head -8
