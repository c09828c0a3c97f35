#!/usr/bin/env bash
# ctest install_consumer (tests/CMakeLists.txt): installs this build to a fresh prefix with
# `cmake --install`, checks the installed files, builds tests/consumer against the prefix with
# find_package(torchfuse) and runs it, then runs the installed CLI (--help, and explain on the
# module the consumer saved). Exits non-zero at the first failure.
#
#   run_test.sh CMAKE BUILD_DIR WORK_DIR GENERATOR LIBDIR TORCH_CMAKE_PREFIX [-DVAR=VALUE...]
# The -D arguments (compiler, build type, CUDA toolkit) go to the consumer's configure.
set -euo pipefail
cmake=$1 build=$2 work=$3 generator=$4 libdir=$5 torch_prefix=$6
shift 6
here=$(cd "$(dirname "$0")" && pwd)
prefix=$work/prefix

fail() {
  echo "install_consumer: $*" >&2
  exit 1
}

# Runs a step quietly; on failure prints its log and stops.
step() {
  local name=$1
  shift
  echo "== $name"
  "$@" >"$work/$name.log" 2>&1 || { cat "$work/$name.log"; fail "$name failed: $*"; }
}

rm -rf "$work"
mkdir -p "$work"
step install "$cmake" --install "$build" --prefix "$prefix"

# What the package must hold.
for f in "$libdir/libtorchfuse.so" include/torchfuse/torchfuse.h bin/torchfuse \
         "$libdir/cmake/torchfuse/torchfuseConfig.cmake" "$libdir/cmake/torchfuse/torchfuseConfigVersion.cmake" \
         "$libdir/cmake/torchfuse/torchfuseTargets.cmake"; do
  [ -f "$prefix/$f" ] || fail "missing $prefix/$f"
done
# Private dependencies stay inside libtorchfuse.so: the link interface a consumer resolves names
# none of their targets. (IMPORTED_LINK_DEPENDENT_LIBRARIES may name spdlog::spdlog: CMake only
# uses that list for run-path hints and skips names that are not targets there.)
if grep -n INTERFACE_LINK_LIBRARIES "$prefix/$libdir/cmake/torchfuse/torchfuseTargets.cmake" |
   grep -E 'spdlog|CUDA::|nvrtc|[";]dl[";]'; then
  fail "the installed link interface names a private dependency (above)"
fi

# The consumer as a user builds it; then configured once more with torchfuse's config alone
# finding LibTorch (configure and generate are where a missing target or dependency fails).
step configure "$cmake" -S "$here" -B "$work/build" -G "$generator" \
  "-DCMAKE_PREFIX_PATH=$prefix;$torch_prefix" "$@"
grep -q "torchfuse .* from $prefix/" "$work/configure.log" || { cat "$work/configure.log"; fail "torchfuse not found in $prefix"; }
step build "$cmake" --build "$work/build"
step configure_alone "$cmake" -S "$here" -B "$work/build_alone" -G "$generator" \
  "-DCMAKE_PREFIX_PATH=$prefix;$torch_prefix" -DCONSUMER_FIND_TORCH_FIRST=OFF "$@"

# A LibTorch of another release (a stand-in package claiming 0.1.0) is refused at find_package,
# with both versions named.
echo "== other LibTorch release"
mkdir -p "$work/other_torch/Torch"
printf 'set(PACKAGE_VERSION "0.1.0")\nset(PACKAGE_VERSION_COMPATIBLE TRUE)\n' >"$work/other_torch/Torch/TorchConfigVersion.cmake"
printf 'set(TORCH_LIBRARIES "")\n' >"$work/other_torch/Torch/TorchConfig.cmake"
if "$cmake" -S "$here" -B "$work/build_other" -G "$generator" "-DCMAKE_PREFIX_PATH=$prefix;$work/other_torch" \
     -DCONSUMER_FIND_TORCH_FIRST=OFF "$@" >"$work/configure_other.log" 2>&1; then
  cat "$work/configure_other.log"
  fail "configured against a LibTorch of another release"
fi
# (CMake wraps the message: compare with runs of white space made one space.)
refusal=$(tr -s '[:space:]' ' ' <"$work/configure_other.log")
grep -q "built against LibTorch .* finds LibTorch 0.1.0" <<<"$refusal" ||
  { cat "$work/configure_other.log"; fail "the refusal does not name the versions"; }

echo "== run consumer"
"$work/build/torchfuse_consumer" "$work/m.pt" || fail "the consumer's checks failed"

# The installed CLI finds the installed libtorchfuse.so through its RPATH ($ORIGIN/../LIBDIR).
echo "== installed CLI"
# (ldd's output is kept first: `ldd | grep -q` under pipefail fails whenever grep exits before ldd
# has written everything, and ldd dies of SIGPIPE.)
loaded=$(ldd "$prefix/bin/torchfuse")
grep -qF "libtorchfuse.so => $prefix/" <<<"$loaded" ||
  { echo "$loaded"; fail "bin/torchfuse does not load $prefix/$libdir/libtorchfuse.so"; }
"$prefix/bin/torchfuse" --help >"$work/help.log" 2>&1 || { cat "$work/help.log"; fail "torchfuse --help failed"; }
grep -q explain "$work/help.log" || { cat "$work/help.log"; fail "torchfuse --help lists no commands"; }
"$prefix/bin/torchfuse" explain "$work/m.pt" --device cpu --input "f32[8,64]" --no-source >"$work/explain.log" 2>&1 ||
  { cat "$work/explain.log"; fail "torchfuse explain failed"; }
grep -q "fusion groups: 1" "$work/explain.log" || { cat "$work/explain.log"; fail "torchfuse explain: not one fusion group"; }
echo "install_consumer: passed"
