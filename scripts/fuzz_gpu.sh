#!/usr/bin/env bash
# GPU machine: torchfuse_fuzz --mode gpu over programs [START, START + COUNT) of SEED, split over
# JOBS processes sharing the GPU (NVRTC runs on the CPU), each stopping after TIME_LIMIT seconds.
# Writes $OUT/fuzz_gpu.md (the summed counts, then every failure, shrunk) and prints the summary.
# Every second process runs its attention through torchfuse's own kernel wherever the kernel can
# run it, alternately with its rows schedule (TORCHFUSE_ATTENTION_KERNEL=1) and its keys schedule
# (TORCHFUSE_ATTENTION_KERNEL=keys); ATTENTION_KERNEL=0 leaves every process to ATen's pick.
# SIBLINGS=1 compiles every program with CompileOptions::fuse_siblings (--fuse-siblings).
#   BUILD_DIR=build-gpu SEED=1 COUNT=10000 JOBS=12 TIME_LIMIT=400 bash scripts/fuzz_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu_out}
BUILD_DIR=${BUILD_DIR:-build-gpu}
SEED=${SEED:-1}
START=${START:-0}
COUNT=${COUNT:-10000}
JOBS=${JOBS:-12}
TIME_LIMIT=${TIME_LIMIT:-0}
mkdir -p "$OUT"
logs=$(mktemp -d)
per=$(( (COUNT + JOBS - 1) / JOBS ))
for ((j = 0; j < JOBS; ++j)); do
  s=$(( START + j * per ))
  n=$(( per < START + COUNT - s ? per : START + COUNT - s ))
  [ "$n" -le 0 ] && continue
  kernel=0
  if [ "${ATTENTION_KERNEL:-1}" != 0 ] && [ $(( j % 2 )) = 1 ]; then
    kernel=$([ $(( j % 4 )) = 1 ] && echo 1 || echo keys)
  fi
  echo "$kernel" >"$logs/kernel.$j"
  TORCHFUSE_ATTENTION_KERNEL=$kernel TORCHFUSE_FUZZ_TRACE="$logs/trace.$j" "$BUILD_DIR"/tests/torchfuse_fuzz --mode gpu --seed "$SEED" --start "$s" \
    --count "$n" --time-limit "$TIME_LIMIT" --report "$logs/report.$j.md" $([ "${SIBLINGS:-0}" = 1 ] && echo --fuse-siblings) >"$logs/log.$j" 2>&1 &
done
status=0
for job in $(jobs -p); do wait "$job" || status=1; done
python3 - "$logs" "$OUT/fuzz_gpu.md" <<'EOF'
import glob, re, sys, collections
logs, out = sys.argv[1], sys.argv[2]
totals = collections.Counter()
tables = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0]))
failures, crashes = [], []
for log in sorted(glob.glob(logs + "/log.*")):
    j = log.rsplit(".", 1)[1]
    report = f"{logs}/report.{j}.md"
    try:
        text = open(report).read()
    except OSError:
        trace = open(f"{logs}/trace.{j}").read().strip() if glob.glob(f"{logs}/trace.{j}") else "?"
        crashes.append(f"process {j} ended without a report (last program {trace}):\n" + open(log).read()[-3000:])
        continue
    head = text.split("\n", 1)[0]
    m = re.search(r"\(ran (\d+)\): (\d+) passed, (\d+) failed, (\d+) skipped", head)
    for k, v in zip(["ran", "passed", "failed", "skipped"], m.groups()):
        totals[k] += int(v)
    for line in text.splitlines():
        for title in ("per dtype", "per op", "per schedule"):
            if line.startswith(title):
                for name, p, c in re.findall(r" (\S+(?: \S+)?) (\d+)/(\d+)", line.split(":", 1)[1]):
                    tables[title][name][0] += int(p)
                    tables[title][name][1] += int(c)
        if line.startswith(("  failed:", "  skipped:", "  passed:")):
            kind, name, n = re.match(r"  (\w+): (.*): (\d+)", line).groups()
            totals[f"{kind}: {name}"] += int(n)
    kernel = open(f"{logs}/kernel.{j}").read().strip()
    for f in re.findall(r"### program.*?(?=\n### program|\Z)", text, re.S):
        failures.append(f.replace("\n", f"\n(attention through torchfuse's kernel: TORCHFUSE_ATTENTION_KERNEL={kernel})\n", 1)
                        if kernel != "0" else f)
lines = [f"torchfuse_fuzz --mode gpu: {totals['ran']} programs ran, {totals['passed']} passed, "
         f"{totals['failed']} failed, {totals['skipped']} skipped, {len(crashes)} processes crashed"]
lines += [f"  {k}: {v}" for k, v in sorted(totals.items()) if ":" in k]
for title, t in tables.items():
    lines.append(title + " (passed/checked): " + ", ".join(f"{k} {p}/{c}" for k, (p, c) in sorted(t.items())))
summary = "\n".join(lines)
open(out, "w").write(summary + "\n\n" + "\n".join(crashes) + "\n" + "\n".join(failures))
print(summary)
for c in crashes: print(c[:2000])
for f in failures[:5]: print(f[:3000])
EOF
rm -rf "$logs"
exit $status
