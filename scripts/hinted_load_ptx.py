"""Compiles every replay-corpus kernel (tests/replay, sm_90) to PTX twice: with the prelude's hinted
loads as they are (inline assembly without side effects, which the compiler may hoist above the
bounds checks around them) and as `asm volatile` (never moved), and reports the kernels whose PTX
differs. Needs only nvcc (no GPU): `python3 scripts/hinted_load_ptx.py [OUT_DIR]`. docs/performance.md
("Hinted loads above their bounds checks") has what it found."""
import os, re, subprocess, sys, glob
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'replay')
prelude = open(os.path.join(root, 'prelude.cu')).read()
vol = prelude.replace('asm("ld.global.nc."', 'asm volatile("ld.global.nc."')
assert vol != prelude
out = sys.argv[1] if len(sys.argv) > 1 else '/tmp/hinted_load_ptx'
os.makedirs(out, exist_ok=True)
res = []
for f in sorted(glob.glob(root + '/*.cu')):
    if f.endswith('prelude.cu'): continue
    text = open(f).read()
    parts = re.split(r'^// ==== (sm_\d+): (.*)$', text, flags=re.M)
    # parts: [header, arch, title, body, ...]
    bodies = {}
    for i in range(1, len(parts), 3):
        arch, title, body = parts[i], parts[i + 1], parts[i + 2]
        bodies[arch] = bodies.get('sm_80', body) if title.startswith('the same kernels') else body
    for arch, body in bodies.items():
        if arch != 'sm_90': continue
        name = os.path.basename(f)[:-3]
        ptx = {}
        for tag, pre in (('asm', prelude), ('vol', vol)):
            src = f'{out}/{name}.{tag}.cu'
            open(src, 'w').write(body.replace('// <prelude.cu>', pre))
            r = subprocess.run(['/usr/local/cuda/bin/nvcc', '-arch=sm_90', '-ptx', '-w', '-o', f'{out}/{name}.{tag}.ptx', src], capture_output=True, text=True)
            if r.returncode: print(name, tag, 'FAILED', r.stderr[-500:]); break
            ptx[tag] = open(f'{out}/{name}.{tag}.ptx').read()
        if len(ptx) == 2:
            same = ptx['asm'] == ptx['vol']
            # Differences in the .nc (read-only path) of loads alone: volatile assembly keeps the
            # compiler from proving the other loads read-only; no load moved.
            nc_only = not same and ptx['asm'].replace('ld.global.nc.', 'ld.global.') == ptx['vol'].replace('ld.global.nc.', 'ld.global.')
            la = ptx['asm'].count('ld.global'); lv = ptx['vol'].count('ld.global')
            res.append((name, same, la, lv, len(ptx['asm'].splitlines()), len(ptx['vol'].splitlines())))
            res[-1] += (nc_only,)
            print(name, 'same' if same else 'differs in .nc only' if nc_only else 'DIFFERS', 'ld.global', la, lv,
                  'lines', res[-1][4], res[-1][5], flush=True)
print('differ:', sum(1 for r in res if not r[1]), 'of', len(res), '(in .nc only:', sum(1 for r in res if r[6]), ')')
