# Sourced by the device calls' scripts: show FILE prints each JSON line of an edgevla_bench_cuda_*
# output as its views, E2E, backbone and action-head medians (ms).
show() {
  grep -h '^{' "$1" | python3 -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'],
          'head', d.get('action_head_ms', {}).get('median'))"
}
