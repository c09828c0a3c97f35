// Log switches. Silent by default; $TORCHFUSE_LOGS (comma-separated) or CompileOptions::logs
// turn on: output_code (generated kernels), graph (IR before and after fusion), passes (IR after
// every pass), fusion (fusion decisions, refusals with reasons), recompiles, all.
#pragma once

#include <string>

namespace torchfuse {

enum class LogTopic { OutputCode, Graph, Passes, Fusion, Recompiles };

struct LogSwitches {
  bool output_code = false;
  bool graph = false;
  bool passes = false;
  bool fusion = false;
  bool recompiles = false;

  // Parses "output_code,graph" (unknown names are reported once and ignored).
  static LogSwitches parse(const std::string& spec);
  // $TORCHFUSE_LOGS merged with `extra`.
  static LogSwitches from_env_and(const std::string& extra);
  bool on(LogTopic topic) const;
};

// Lines on stderr as "[torchfuse] ...", through spdlog. Callers gate them with LogSwitches.
// (spdlog stays inside log_sink.cpp: LibTorch ships its own fmt, which clashes with spdlog's.)
void log_info(const std::string& message);
void log_warn(const std::string& message);

}  // namespace torchfuse
