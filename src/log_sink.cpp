// The only file that includes spdlog; it is compiled without LibTorch's include directories.
#include <memory>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "src/logging.h"

namespace torchfuse {
namespace {

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto l = spdlog::stderr_color_mt("torchfuse");
    l->set_pattern("[torchfuse] %v");
    l->set_level(spdlog::level::info);
    return l;
  }();
  return *instance;
}

}  // namespace

void log_info(const std::string& message) { logger().info("{}", message); }
void log_warn(const std::string& message) { logger().warn("{}", message); }

}  // namespace torchfuse
