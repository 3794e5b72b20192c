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
# show_timeline FILE prints each --timeline line of an edgevla_bench_cuda_* output: the host's E2E,
# the device's busy time, the lead before its first record, the idle gaps and the tail, the
# largest gaps with the records on either side and each stream's span (of run 1: run 0 holds the
# first graph launch under recording).
show_timeline() {
  grep -h '_timeline"' "$1" | python3 -c "
import json, sys
for l in sys.stdin:
    d = json.loads(l); t = d['timeline']
    print(' views %d run %d e2e %.3f ms: window %.1f us, busy %.1f, lead %.1f, gaps %.1f (%d of >= 1 us), tail %.1f' % (
        d['views'], d['run'], d['e2e_ms'], t['window_us'], t['busy_us'], t['lead_us'], t['gaps_us'], t['gap_count'], t['tail_us']))
    if d['run'] == 1:  # run 0 carries the first graph launch under recording
        for g in t['largest_gaps'][:8]:
            print('   gap %.1f us at %.1f: %s -> %s' % (g['us'], g['at_us'], g['opened_by'][:60], g['closed_by'][:60]))
        for s in t['streams']:
            print('   stream %d: %d records, %.1f-%.1f us, busy %.1f' % (s['id'], s['records'], s['from_us'], s['to_us'], s['busy_us']))"
}
