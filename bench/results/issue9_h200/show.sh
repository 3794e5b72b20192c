# Sourced by the device calls' scripts: show FILE prints each JSON line of an edgevla_bench_cuda_*
# output as its views, E2E, backbone and action-head medians (ms), and the stages-alone lines'
# head steps alone and once-a-chunk part.
show() {
  grep -h '^{' "$1" | python3 -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    if 'e2e_ms' in d:
        print(' views', d.get('views'), 'e2e', d['e2e_ms']['median'], 'backbone', d['backbone_ms']['median'],
              'head', d.get('action_head_ms', {}).get('median'))
    elif 'head_steps_alone_ms' in d:
        print(' views', d.get('views'), 'head steps alone', d['head_steps_alone_ms'], 'once', d['head_once_ms'])"
}
