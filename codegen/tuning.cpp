#include "codegen/tuning.h"

#include <algorithm>
#include <initializer_list>
#include <sstream>

#include "src/error.h"

namespace torchfuse {
namespace codegen {
namespace {

int int_knob(const std::string& origin, const std::string& name, const std::string& value, int lo, int hi) {
  int v = 0;
  try {
    size_t used = 0;
    v = std::stoi(value, &used);
    TORCHFUSE_CHECK(used == value.size(), "");
  } catch (const std::exception&) {
    TORCHFUSE_CHECK(false, "torchfuse: ", origin, ": ", name, "=", value, " is not an integer");
  }
  TORCHFUSE_CHECK(v >= lo && v <= hi, "torchfuse: ", origin, ": ", name, " must be in [", lo, ", ", hi, "], got ", v);
  return v;
}

RowCachePolicy parse_policy(const std::string& origin, const std::string& value) {
  if (value == "values") return RowCachePolicy::Values;
  if (value == "inputs") return RowCachePolicy::Inputs;
  if (value == "first") return RowCachePolicy::FirstPass;
  if (value == "auto") return RowCachePolicy::Auto;
  TORCHFUSE_CHECK(false, "torchfuse: ", origin, ": row_cache must be values, inputs, first or auto, got '", value, "'");
}

// One of `choices` (ascending): checked against their range first, then against the list.
int int_choice(const std::string& origin, const std::string& name, const std::string& value,
               std::initializer_list<int> choices) {
  const int v = int_knob(origin, name, value, *choices.begin(), *(choices.end() - 1));
  if (std::find(choices.begin(), choices.end(), v) != choices.end()) return v;
  std::string listed;
  for (int c : choices) listed += (listed.empty() ? "" : ", ") + std::to_string(c);
  TORCHFUSE_CHECK(false, "torchfuse: ", origin, ": ", name, "=", value, " is not one of ", listed);
}

}  // namespace

Tuning parse_tuning(const std::string& spec, const Tuning& base, const std::string& origin) {
  Tuning t = base;
  const auto parse_int = [&origin](const std::string& name, const std::string& value, int lo, int hi) {
    return int_knob(origin, name, value, lo, hi);
  };
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    TORCHFUSE_CHECK(eq != std::string::npos, "torchfuse: ", origin, ": '", item, "' is not name=value");
    const std::string name = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    if (name == "pointwise_unroll") t.pointwise_unroll = parse_int(name, value, 1, 8);
    else if (name == "pointwise_waves") t.pointwise_waves = parse_int(name, value, 0, 64);
    // (A tile's side divides a warp's lanes times whole rows of the block.)
    else if (name == "pointwise_tile") t.pointwise_tile = int_choice(origin, name, value, {0, 16, 32, 64});
    else if (name == "row_cache") t.row_cache = parse_policy(origin, value);
    else if (name == "row_vectors") t.row_vectors = parse_int(name, value, 1, 16);
    else if (name == "row_team_block") t.row_team_block = int_choice(origin, name, value, {32, 64, 128, 256});
    else if (name == "row_min_threads") t.row_min_threads = parse_int(name, value, 1, 32);
    else if (name == "row_single_pass_vectors") t.row_single_pass_vectors = parse_int(name, value, 1, 32);
    else if (name == "row_cluster") t.row_cluster = parse_int(name, value, 1, 8);
    else if (name == "row_cache_registers") t.row_cache_registers = parse_int(name, value, 0, 128);
    else if (name == "row_team") t.row_team = parse_int(name, value, 0, 1024);
    else if (name == "row_waves") t.row_waves = parse_int(name, value, 0, 64);
    else if (name == "row_rounds") t.row_rounds = parse_int(name, value, 0, 64);
    else if (name == "row_fill") t.row_fill = parse_int(name, value, 0, 2048);
    else if (name == "row_early_loads") t.row_early_loads = parse_int(name, value, -1, 64);
    else if (name == "row_shared_rounds") t.row_shared_rounds = parse_int(name, value, 0, 1);
    else if (name == "looped_blocks_per_sm") t.looped_blocks_per_sm = parse_int(name, value, 0, 32);
    else if (name == "looped_unroll") t.looped_unroll = parse_int(name, value, 0, 8);
    else if (name == "column_unroll") t.column_unroll = parse_int(name, value, 1, 8);
    else if (name == "column_cache") t.column_cache = parse_int(name, value, 0, 128);
    else if (name == "column_blocks") t.column_blocks = parse_int(name, value, 1, 4);
    else if (name == "column_float_sums") t.column_float_sums = parse_int(name, value, 0, 2);
    else if (name == "column_tile_threads") t.column_tile_threads = int_choice(origin, name, value, {8, 16, 32});
    else if (name == "column_rows") t.column_rows = int_choice(origin, name, value, {8, 16, 32});
    else if (name == "column_pass_blocks") t.column_pass_blocks = parse_int(name, value, 0, 8);  // kColumnPassMaxBlocksPerSm
    else if (name == "column_pass_unroll") t.column_pass_unroll = parse_int(name, value, 1, 16);
    else if (name == "column_pass_vectors") t.column_pass_vectors = parse_int(name, value, 0, 1);
    else if (name == "column_pass_vector_unroll") t.column_pass_vector_unroll = parse_int(name, value, 1, 16);
    else if (name == "column_pass_wave_kb") t.column_pass_wave_kb = parse_int(name, value, -1, 1 << 24);
    else if (name == "column_pass_wave_hints") t.column_pass_wave_hints = parse_int(name, value, 0, 1);
    else if (name == "column_pass_launches") t.column_pass_launches = parse_int(name, value, 0, 8);
    else if (name == "column_cut_kb") t.column_cut_kb = parse_int(name, value, -1, 1 << 30);
    else if (name == "chunk_sums") t.chunk_sums = parse_int(name, value, 0, 1);
    else if (name == "full_unroll") t.full_unroll = parse_int(name, value, 0, 8);
    else if (name == "online_softmax") t.online_softmax = parse_int(name, value, 0, 1);
    else if (name == "column_online") t.column_online = parse_int(name, value, 0, 1);
    else if (name == "online_min_row") t.online_min_row = parse_int(name, value, 1, 1 << 30);
    else if (name == "row_min_blocks") t.row_min_blocks = parse_int(name, value, 0, 32);
    else if (name == "row_prefetch") t.row_prefetch = parse_int(name, value, -1, 1);
    else if (name == "fast_math") t.fast_math = parse_int(name, value, 0, 1);
    else if (name == "cache_hints") t.cache_hints = parse_int(name, value, -1, 1);
    else if (name == "row_stage") t.row_stage = parse_int(name, value, -1, 4);
    else if (name == "row_ring") t.row_ring = parse_int(name, value, -1, 1);
    else if (name == "row_ring_vectors") t.row_ring_vectors = parse_int(name, value, 0, 16);
    else if (name == "row_hold") t.row_hold = parse_int(name, value, -1, 1);
    else if (name == "shared_hold") t.shared_hold = parse_int(name, value, -1, 1);
    else if (name == "row_exact") t.row_exact = parse_int(name, value, 0, 1);
    else if (name == "row_whole_warps") t.row_whole_warps = parse_int(name, value, 0, 1);
    else TORCHFUSE_CHECK(false, "torchfuse: ", origin, ": unknown knob '", name, "'");
  }
  return t;
}

}  // namespace codegen
}  // namespace torchfuse
