#include "runtime/hot_path_clock.h"

namespace torchfuse {
namespace runtime {

thread_local HotPathClock* HotPathClock::installed_ = nullptr;

const char* hot_phase_name(HotPhase p) {
  switch (p) {
    case HotPhase::entry: return "entry";
    case HotPhase::graph_lookup: return "graph lookup";
    case HotPhase::replay: return "graph replay";
    case HotPhase::between: return "between nodes";
    case HotPhase::fallback: return "fallback";
    case HotPhase::guards: return "guards";
    case HotPhase::recorded: return "recorded launch";
    case HotPhase::inputs: return "inputs";
    case HotPhase::plan: return "plan";
    case HotPhase::allocate: return "allocate";
    case HotPhase::kernel: return "kernel";
    case HotPhase::pack: return "pack";
    case HotPhase::launch: return "cuLaunchKernel";
    case HotPhase::node_exit: return "node exit";
    case HotPhase::results: return "results";
    case HotPhase::kCount: break;
  }
  return "?";
}

std::array<double, HotPathClock::kPhases> HotPathClock::mean_us(int64_t calls) const {
  std::array<double, kPhases> us{};
  for (int i = 0; i < kPhases; ++i) us[i] = calls > 0 ? static_cast<double>(ns_[i]) / 1e3 / static_cast<double>(calls) : 0.0;
  return us;
}

std::vector<std::pair<std::string, double>> HotPathClock::named_mean_us(int64_t calls) const {
  const std::array<double, kPhases> us = mean_us(calls);
  std::vector<std::pair<std::string, double>> named;
  for (int i = 0; i < kPhases; ++i)
    if (us[i] > 0) named.emplace_back(hot_phase_name(static_cast<HotPhase>(i)), us[i]);
  return named;
}

}  // namespace runtime
}  // namespace torchfuse
