#!/usr/bin/env bash
# Regenerates the replay corpus of generated kernels (tests/replay/, see tests/test_replay.cpp)
# after a change that is meant to change generated code; review `git diff tests/replay` and
# commit it with the change.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS=torchfuse_replay_tests bash scripts/build.sh
env -u TORCHFUSE_TUNE TORCHFUSE_REPLAY_UPDATE=1 "${BUILD_DIR:-build}/tests/torchfuse_replay_tests" --gtest_brief=1
git status --short tests/replay | head -50
