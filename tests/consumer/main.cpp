// A program built outside the torchfuse tree against an installed torchfuse (find_package): it
// compiles relu(x * 2) + 1, checks what torchfuse planned (one kernel of three ops, compiled by
// NVRTC for sm_90 without a GPU) and what it computes (equal to eager; on a GPU, by one fused
// kernel launch). Prints each check; exits 1 when one fails.
//
//   torchfuse_consumer [MODEL_OUT.pt]   also saves the TorchScript module there (for the CLI check)
#include <torch/cuda.h>
#include <torch/script.h>
#include <torchfuse/torchfuse.h>

#include <iostream>
#include <string>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::cout << (ok ? "ok      " : "FAILED  ") << what << "\n";
  if (!ok) ++failures;
}

torch::jit::Module relu_module() {
  torch::jit::Module m("Consumer");
  m.define(R"(
def forward(self, x):
    return torch.relu(x * 2.0) + 1.0
)");
  return m;
}

at::Tensor expected_for(const at::Tensor& x) { return at::relu(x * 2.0) + 1.0; }

// explain() runs conversion, fusion and NVRTC for CompileOptions::offline_arch: no GPU needed.
void check_plan(const torchfuse::CompiledModule& fused, const at::Tensor& x) {
  const torchfuse::Explanation e = fused.explain({x}, /*compile_kernels=*/true);
  check(e.kernels.size() == 1, "explain: one fusion group (got " + std::to_string(e.kernels.size()) + ")");
  if (e.kernels.size() != 1) return;
  check(e.kernels[0].num_ops == 3, "explain: its kernel holds mul, relu and add (" + e.kernels[0].description + ")");
  check(e.kernels[0].source.find("__global__") != std::string::npos, "explain: the kernel's CUDA source");
  check(e.cubin_bytes.size() == 1 && e.cubin_bytes[0] > 0, "explain: NVRTC compiled it for " + e.arch);
}

// On CPU forward runs eager; on a GPU the group's kernel runs: one launch per call.
void check_forward(torchfuse::CompiledModule& fused, const at::Tensor& x, const std::string& device) {
  const at::Tensor y = fused.forward({x}).toTensor();
  check(at::allclose(y, expected_for(x)), "forward on " + device + " equals eager");
  check(torchfuse::compare_with_eager(fused, {x}).passed(), "compare_with_eager on " + device + " passes");
}

void check_gpu(torchfuse::CompiledModule& fused, const at::Tensor& x) {
  if (!torch::cuda::is_available() || !torchfuse::cuda_available()) {
    std::cout << "skipped GPU checks: no CUDA device\n";
    return;
  }
  const at::Tensor xg = x.to(at::kCUDA);
  const int64_t before = fused.stats().kernel_launches;
  check_forward(fused, xg, "cuda");
  check(fused.stats().kernel_launches > before, "forward on cuda launched the fused kernel");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    torch::jit::Module m = relu_module();
    if (argc > 1) m.save(argv[1]);
    torchfuse::CompiledModule fused = torchfuse::compile(m);
    const at::Tensor x = at::randn({8, 64});
    check_plan(fused, x);
    check_forward(fused, x, "cpu");
    check_gpu(fused, x);
  } catch (const std::exception& e) {
    std::cout << "FAILED  exception: " << e.what() << "\n";
    return 1;
  }
  std::cout << (failures ? "torchfuse consumer: FAILED\n" : "torchfuse consumer: all checks passed\n");
  return failures ? 1 : 0;
}
