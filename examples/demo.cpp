// torchfuse demo: bias + GELU + residual add, compiled into one kernel.
//
// On a CUDA machine: compiles the module, prints the generated kernel, compares against eager
// and times both. Without a GPU: says so, and still prints the IR, the fusion groups and the
// generated source, compiled by NVRTC for sm_90 to show that it compiles.
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "torchfuse/torchfuse.h"

namespace {

torch::jit::Module make_module() {
  torch::jit::Module m("BiasGeluResidual");
  m.register_parameter("bias", torch::randn({1024}), false);
  m.define(R"JIT(
def forward(self, x, residual):
    y = x + self.bias
    g = torch.gelu(y)
    return g * 0.5 + residual
)JIT");
  return m;
}

// Median wall time of `fn` in microseconds, synchronizing the device around each call.
template <typename F>
double median_us(F&& fn, int reps) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    torch::cuda::synchronize();
    const auto start = std::chrono::steady_clock::now();
    fn();
    torch::cuda::synchronize();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
  torch::manual_seed(0);
  torch::jit::Module module = make_module();
  const bool gpu = torch::cuda::is_available() && torchfuse::cuda_available();
  const torch::Device device = gpu ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  if (gpu) module.to(device);

  const auto x = torch::randn({4096, 1024}, device);
  const auto r = torch::randn({4096, 1024}, device);
  torchfuse::CompiledModule compiled = torchfuse::compile(module);

  if (!gpu) {
    std::cout << "No CUDA GPU available: showing what torchfuse builds, without running it.\n\n";
    const auto e = compiled.explain({x, r}, /*compile_kernels=*/true);
    std::cout << "== IR after conversion ==\n" << e.ir_before << "\n== IR after fusion ==\n" << e.ir_after << "\n";
    std::cout << "== TorchScript graph with fusion nodes ==\n" << e.rewritten_graph << "\n";
    for (size_t i = 0; i < e.kernels.size(); ++i) {
      std::cout << "== kernel " << e.kernels[i].name << " (" << e.kernels[i].description << ") ==\n"
                << e.kernels[i].source << "\nNVRTC compiled it for " << e.arch << ": " << e.cubin_bytes[i]
                << " bytes of cubin\n";
    }
    return 0;
  }

  compiled.forward({x, r});  // first call: profile, fuse, compile
  for (const auto& k : compiled.kernels()) {
    std::cout << "== kernel " << k.name << " (" << k.description << ") ==\n" << k.source << "\n";
  }
  std::cout << "TorchScript graph run by torchfuse:\n" << compiled.graph_for({x, r}) << "\n";
  const auto report = torchfuse::compare_with_eager(compiled, {x, r});
  std::cout << "Compared with eager:\n" << report.to_string() << "\n";

  for (int i = 0; i < 5; ++i) {
    compiled.forward({x, r});
    compiled.forward_eager({x, r});
  }
  const double eager_us = median_us([&] { compiled.forward_eager({x, r}); }, 50);
  const double fused_us = median_us([&] { compiled.forward({x, r}); }, 50);
  std::cout << "eager: " << eager_us << " us per call, torchfuse: " << fused_us << " us per call (x"
            << eager_us / fused_us << ")\n";
  return report.passed() ? 0 : 1;
}
