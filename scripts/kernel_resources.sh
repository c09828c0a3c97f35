#!/usr/bin/env bash
# Registers, spills and shared memory of every kernel torchfuse generates for a model, without a
# GPU: `torchfuse explain` prints each kernel's source, and nvcc --resource-usage compiles it for
# the architecture (ptxas's own count, which Nsight Compute reports on the device). Tuning knobs
# come from $TORCHFUSE_TUNE, so variants can be screened for spills before a GPU run.
#   TORCHFUSE_TUNE=column_pass_blocks=8 bash scripts/kernel_resources.sh model.pt bf16[16384,4096]
# ARCH (sm_90), BUILD_DIR (build) and NVCC (/usr/local/cuda/bin/nvcc) may be set.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: kernel_resources.sh MODEL INPUT_SPEC..." >&2; exit 2; }
model=$1
shift
ARCH=${ARCH:-sm_90}
BUILD_DIR=${BUILD_DIR:-build}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
inputs=()
for spec in "$@"; do inputs+=(--input "$spec"); done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$BUILD_DIR/tools/torchfuse" explain "$model" "${inputs[@]}" --device cpu --arch "$ARCH" --no-nvrtc >"$work/explain.txt" 2>&1 || {
  tail -5 "$work/explain.txt" >&2
  exit 1
}
python3 - "$work" "$ARCH" "$NVCC" <<'PY'
import re, subprocess, sys
work, arch, nvcc = sys.argv[1:4]
text = open(f"{work}/explain.txt").read()
kernels = re.findall(r"^== kernel (\S+) \(.*?\) ==\n(.*?)(?=^== |\Z)", text, re.S | re.M)
if not kernels:
    sys.exit("kernel_resources: explain printed no kernel sources")
for name, source in kernels:
    path = f"{work}/{name}.cu"
    with open(path, "w") as f:
        f.write(source)
    run = subprocess.run([nvcc, "-cubin", f"-arch={arch}", "--resource-usage", "-o", "/dev/null", path],
                         capture_output=True, text=True)
    usage = " ".join(l.split(":", 1)[-1].strip() for l in (run.stdout + run.stderr).splitlines()
                     if "registers" in l or "spill" in l)
    bounds = re.search(r"__launch_bounds__\([^)]*\)", source)
    print(f"{name}  {bounds.group(0) if bounds else '(no launch bounds)'}  {usage if run.returncode == 0 else 'nvcc failed: ' + run.stderr[-300:]}")
PY
