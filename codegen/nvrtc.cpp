#include "codegen/nvrtc.h"

#include <chrono>
#include <sstream>

#include <nvrtc.h>

#include "src/error.h"

namespace torchfuse {
namespace codegen {
namespace {

std::string numbered(const std::string& source) {
  std::ostringstream os;
  std::istringstream in(source);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) os << n << (n < 10 ? "    " : n < 100 ? "   " : "  ") << line << "\n";
  return os.str();
}

std::string program_log(nvrtcProgram prog) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  nvrtcGetProgramLog(prog, log.data());
  log.resize(size - 1);
  return log;
}

void check(nvrtcResult r, const char* what) {
  TORCHFUSE_CHECK(r == NVRTC_SUCCESS, "torchfuse: NVRTC ", what, " failed: ", nvrtcGetErrorString(r));
}

struct ProgramGuard {
  nvrtcProgram prog = nullptr;
  ~ProgramGuard() {
    if (prog) nvrtcDestroyProgram(&prog);
  }
};

}  // namespace

std::vector<std::string> nvrtc_options(const std::string& arch, bool fmad) {
  return {"--gpu-architecture=" + arch, "--std=c++17", "-default-device", fmad ? "--fmad=true" : "--fmad=false"};
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  check(nvrtcVersion(&major, &minor), "nvrtcVersion");
  return std::to_string(major) + "." + std::to_string(minor);
}

Cubin compile_to_cubin(const GeneratedKernel& kernel, const std::string& arch) {
  TORCHFUSE_CHECK(arch.rfind("sm_", 0) == 0, "torchfuse: NVRTC target must be a real architecture like sm_90, got '",
                  arch, "'");
  const auto start = std::chrono::steady_clock::now();
  ProgramGuard guard;
  const std::string file = kernel.name + ".cu";
  check(nvrtcCreateProgram(&guard.prog, kernel.source.c_str(), file.c_str(), 0, nullptr, nullptr),
        "nvrtcCreateProgram");
  const auto opts = nvrtc_options(arch, kernel.fmad);
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  const nvrtcResult r = nvrtcCompileProgram(guard.prog, static_cast<int>(argv.size()), argv.data());
  Cubin out;
  out.log = program_log(guard.prog);
  if (r != NVRTC_SUCCESS) {
    throw Error("torchfuse: NVRTC could not compile kernel " + kernel.name + " for " + arch + ": " +
                nvrtcGetErrorString(r) + "\n--- NVRTC log ---\n" + out.log + "\n--- kernel source ---\n" +
                numbered(kernel.source));
  }
  size_t size = 0;
  check(nvrtcGetCUBINSize(guard.prog, &size), "nvrtcGetCUBINSize");
  out.image.resize(size);
  check(nvrtcGetCUBIN(guard.prog, out.image.data()), "nvrtcGetCUBIN");
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace codegen
}  // namespace torchfuse
