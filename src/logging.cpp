#include "src/logging.h"

#include <cstdlib>
#include <sstream>


namespace torchfuse {

LogSwitches LogSwitches::parse(const std::string& spec) {
  LogSwitches s;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    // trim spaces
    const auto b = item.find_first_not_of(" \t");
    const auto e = item.find_last_not_of(" \t");
    if (b == std::string::npos) continue;
    item = item.substr(b, e - b + 1);
    if (item == "output_code") s.output_code = true;
    else if (item == "graph") s.graph = true;
    else if (item == "passes") s.passes = true;
    else if (item == "fusion") s.fusion = true;
    else if (item == "recompiles") s.recompiles = true;
    else if (item == "all") s.output_code = s.graph = s.passes = s.fusion = s.recompiles = true;
    else log_warn("unknown log switch '" + item + "' (known: output_code, graph, passes, fusion, recompiles, all)");
  }
  return s;
}

LogSwitches LogSwitches::from_env_and(const std::string& extra) {
  const char* env = std::getenv("TORCHFUSE_LOGS");
  std::string spec = env ? env : "";
  if (!extra.empty()) spec += "," + extra;
  return parse(spec);
}

bool LogSwitches::on(LogTopic topic) const {
  switch (topic) {
    case LogTopic::OutputCode: return output_code;
    case LogTopic::Graph: return graph;
    case LogTopic::Passes: return passes;
    case LogTopic::Fusion: return fusion;
    case LogTopic::Recompiles: return recompiles;
  }
  return false;
}

}  // namespace torchfuse
