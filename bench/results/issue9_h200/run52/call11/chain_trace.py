# Per-kernel durations of the probe's plain chain inside its graph, from Nsight Systems' GPU trace
# (CSV of `nsys stats --report cuda_gpu_trace`): the last full graph launch of 225 kernels, each
# kernel's duration and the gap from the previous kernel's end, averaged per kernel name.
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
key = lambda r, w: next(v for k, v in r.items() if k and w in k)
ks = [(int(key(r, 'Start')), int(key(r, 'Duration')), key(r, 'Name')) for r in rows if 'Kernel' in r.get('Name', '') or True]
ks = [k for k in ks if not k[2].startswith('[CUDA')]
ks.sort()
# The chain's launches: runs of 225 kernels; take the last one that starts with a norm kernel.
step = None
for i in range(len(ks) - 225, -1, -1):
    if 'norm' in ks[i][2] and 'norm' in ks[i + 224][2]:
        step = ks[i:i + 225]
        break
if step is None:
    print('no 225-kernel step found; kernels:', len(ks)); sys.exit(0)
dur = collections.defaultdict(list); gap = collections.defaultdict(list)
for j, (st, d, name) in enumerate(step):
    short = name.split('(')[0][:60]
    dur[short].append(d / 1e3)
    if j: gap[short].append((st - (step[j - 1][0] + step[j - 1][1])) / 1e3)
print('step span us', (step[-1][0] + step[-1][1] - step[0][0]) / 1e3)
for k in dur:
    g = gap[k] or [0]
    print(f'{k:60s} n={len(dur[k]):3d} dur={sum(dur[k])/len(dur[k]):6.2f} us gap_before={sum(g)/len(g):6.2f} us')
