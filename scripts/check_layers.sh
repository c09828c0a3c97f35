#!/usr/bin/env bash
# The layering rule (docs/architecture.md, "Module map"): each top-level folder is one floor,
# src/ <- passes/ <- codegen/ <- runtime/ <- tools/ (the command-line tool, an application on
# top of the library), and a file includes only from its own floor, the floors below it and the
# public headers (include/torchfuse/). Prints every include that points
# up a floor and fails if there is one; also fails on a library file over 800 lines.
set -euo pipefail
cd "$(dirname "$0")/.."
floor() {
  case "$1" in
    src) echo 0 ;; passes) echo 1 ;; codegen) echo 2 ;; runtime) echo 3 ;; tools) echo 4 ;; *) echo -1 ;;
  esac
}
bad=0
for file in $(find src passes codegen runtime tools -name '*.h' -o -name '*.cpp' | sort); do
  own=$(floor "${file%%/*}")
  while IFS= read -r inc; do
    target=${inc#*\"}
    target=${target%%\"*}
    level=$(floor "${target%%/*}")
    if [ "$level" -gt "$own" ]; then
      echo "layering: $file includes $target (a floor above ${file%%/*}/)"
      bad=1
    fi
  done < <(grep -E '^#include "' "$file" || true)
  lines=$(wc -l < "$file")
  if [ "$lines" -gt 800 ]; then
    echo "size: $file has $lines lines (the limit is 800: split it by schedule or concern)"
    bad=1
  fi
done
[ "$bad" -eq 0 ] && echo "layers: every include points down a floor or stays on it; no library file over 800 lines"
exit "$bad"
