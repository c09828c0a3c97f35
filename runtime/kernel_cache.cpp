#include "runtime/kernel_cache.h"

#include <map>
#include <tuple>
#include <mutex>
#include <string_view>

#include "codegen/kernel_name.h"
#include "codegen/nvrtc.h"
#include "runtime/disk_cache.h"
#include "runtime/driver_api.h"
#include "runtime/failure_injection.h"
#include "src/error.h"
#include "src/version.h"

namespace torchfuse {
namespace runtime {

struct KernelCache::Impl {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const std::string>> cubins;        // by key
  std::map<std::pair<std::string, int>, CUmodule> modules;                 // by (key, device)
  std::map<std::tuple<std::string, int, std::string>, CUfunction> functions;  // by (key, device, entry)
  std::map<std::string, std::shared_ptr<std::mutex>> compiling;            // one NVRTC run per key
  // The launch path's fast lookup: by (kernel id, device, entry), no source comparison, and
  // found by a view of the entry's name (no string is made per launch).
  std::map<std::tuple<uint64_t, int, std::string>, CUfunction, std::less<>> by_id;
  DiskCache disk;

  explicit Impl(const std::string& dir) : disk(dir) {}
};

KernelCache::KernelCache(const std::string& disk_dir) : impl_(std::make_unique<Impl>(disk_dir)) {}

KernelCache::~KernelCache() = default;

KernelCache& KernelCache::global() {
  // Never destroyed: kernels outlive static teardown.
  static KernelCache* cache = new KernelCache(DiskCache::default_dir());
  return *cache;
}

DiskCache& KernelCache::disk() { return impl_->disk; }

std::string KernelCache::key(const codegen::GeneratedKernel& kernel, const std::string& arch) {
  std::string k = "torchfuse " + std::string(kVersion) + "\nnvrtc " + codegen::nvrtc_version() + "\narch " + arch +
                  "\nname " + kernel.name + "\noptions";
  for (const auto& o : codegen::nvrtc_options(arch, kernel.fmad)) k += " " + o;
  // What the kernel is, not how the graph it came from was numbered: the same kernel from another
  // graph (value ids and group id differ only in comments) finds the same entry.
  k += "\nsource\n" + codegen::canonical_source(kernel.source);
  return k;
}

std::shared_ptr<const std::string> KernelCache::cubin(const codegen::GeneratedKernel& kernel, const std::string& arch,
                                                      CompileCounters* counters) {
  const std::string k = key(kernel, arch);
  std::shared_ptr<std::mutex> key_mutex;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->cubins.find(k);
    if (it != impl_->cubins.end()) {
      if (counters) ++counters->memory_hits;
      return it->second;
    }
    auto& m = impl_->compiling[k];
    if (!m) m = std::make_shared<std::mutex>();
    key_mutex = m;
  }
  // Threads asking for the same kernel wait for one compilation instead of each running NVRTC.
  std::lock_guard<std::mutex> compile_lock(*key_mutex);
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->cubins.find(k);
    if (it != impl_->cubins.end()) {
      if (counters) ++counters->memory_hits;
      return it->second;
    }
  }
  std::shared_ptr<const std::string> image;
  if (auto from_disk = impl_->disk.load(k)) {
    if (counters) ++counters->disk_hits;
    image = std::make_shared<const std::string>(std::move(*from_disk));
  } else {
    if (counters && impl_->disk.enabled()) ++counters->disk_misses;
    codegen::Cubin c = codegen::compile_to_cubin(kernel, arch);
    if (counters) {
      ++counters->nvrtc_compiles;
      counters->nvrtc_micros += static_cast<int64_t>(c.seconds * 1e6);
    }
    impl_->disk.store(k, c.image);
    image = std::make_shared<const std::string>(std::move(c.image));
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->cubins[k] = image;
  return image;
}

CUfunction KernelCache::function(const codegen::GeneratedKernel& kernel, int ordinal, CompileCounters* counters,
                                 const std::string& entry_arg) {
  const std::string& entry = entry_arg.empty() ? kernel.name : entry_arg;
  if (kernel.id != 0) {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->by_id.find(std::tuple<uint64_t, int, std::string_view>(kernel.id, ordinal, entry));
    if (it != impl_->by_id.end()) {
      if (counters) ++counters->memory_hits;
      return it->second;
    }
  }
  const std::string arch = device_info(ordinal).arch();
  const std::string k = key(kernel, arch);
  CUmodule module = nullptr;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->functions.find({k, ordinal, entry});
    if (it != impl_->functions.end()) {
      if (counters) ++counters->memory_hits;
      if (kernel.id != 0) impl_->by_id.emplace(std::make_tuple(kernel.id, ordinal, entry), it->second);
      return it->second;
    }
    auto m = impl_->modules.find({k, ordinal});
    if (m != impl_->modules.end()) module = m->second;
  }
  std::string why;
  const DriverApi* api = driver_api(&why);
  TORCHFUSE_CHECK(api, "torchfuse: cannot load kernel ", kernel.name, ": ", why);
  make_context_current(ordinal);
  if (!module) {
    auto image = cubin(kernel, arch, counters);
    // An injected load fault (debug_fail_kernels "load:") takes the driver's place with the error
    // of an image the device cannot load; nothing is kept, as for a real failure.
    if (has_injected_fault(kernel, Fault::Load)) {
      check_cu(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData (injected by debug_fail_kernels)");
    }
    check_cu(api->cuModuleLoadData(&module, image->data()), "cuModuleLoadData");
    std::lock_guard<std::mutex> lock(impl_->mu);
    // A racing thread's module stays loaded; both are equivalent.
    module = impl_->modules.emplace(std::make_pair(k, ordinal), module).first->second;
  }
  CUfunction fn = nullptr;
  check_cu(api->cuModuleGetFunction(&fn, module, entry.c_str()), "cuModuleGetFunction");
  std::lock_guard<std::mutex> lock(impl_->mu);
  fn = impl_->functions.emplace(std::make_tuple(k, ordinal, entry), fn).first->second;
  if (kernel.id != 0) impl_->by_id.emplace(std::make_tuple(kernel.id, ordinal, entry), fn);
  return fn;
}

}  // namespace runtime
}  // namespace torchfuse
