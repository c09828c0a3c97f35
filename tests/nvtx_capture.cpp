// An NVTX injection library for the tests (tests/nvtx_capture.h): the mechanism Nsight Systems
// uses to see NVTX ranges, recording the domain calls per thread instead of tracing them. Built
// as a module; ctest points NVTX_INJECTION64_PATH at it for torchfuse_nvtx_tests.
//
// NVTX3's loader (nvtx3/nvtxDetail/nvtxInit.h) dlopens the library and calls
// InitializeInjectionNvtx2 with its instance's export-table getter; through the
// NVTX_ETID_CALLBACKS table the library writes its own functions into the instance's CORE2
// (domain) function table. What it leaves unset, NVTX turns into no-ops.
#define NVTX_NO_IMPL  // a tool: the types and ids, none of the API's implementation
#include <nvtx3/nvToolsExt.h>

#include <deque>
#include <mutex>
#include <string>

#include "tests/nvtx_capture.h"

// The handles NVTX passes back to the tool are the tool's own (nvToolsExt.h declares them opaque).
struct nvtxDomainRegistration_st {
  std::string name;
};
struct nvtxStringRegistration_st {
  const nvtxDomainRegistration_st* domain;
  std::string text;
};

namespace {

std::mutex registry_mutex;
std::deque<nvtxDomainRegistration_st> domains;  // deques: handles stay valid as they grow
std::deque<nvtxStringRegistration_st> strings;
int instances = 0;

thread_local std::string thread_events;  // this thread's lines since its last take
thread_local std::string thread_taken;   // what the last take returned
thread_local int thread_depth = 0;       // ranges pushed and not popped, all domains

const std::string& name_of(const nvtxDomainRegistration_st* domain) {
  static const std::string none = "(default)";  // a null handle: NVTX's default domain
  return domain ? domain->name : none;
}

void record(const std::string& line) { thread_events += line + "\n"; }

nvtxDomainHandle_t NVTX_API domain_create(const char* name) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  domains.push_back({name ? name : ""});
  record("domain " + domains.back().name);
  return &domains.back();
}

nvtxStringHandle_t NVTX_API register_string(nvtxDomainHandle_t domain, const char* text) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  strings.push_back({domain, text ? text : ""});
  record("string " + name_of(domain) + " " + strings.back().text);
  return &strings.back();
}

// What a tool reads of a push's attributes: the message, or why it cannot read it.
std::string message_of(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  if (!a) return "bad null attributes";
  if (a->version != NVTX_VERSION) return "bad version " + std::to_string(a->version);
  if (a->size != NVTX_EVENT_ATTRIB_STRUCT_SIZE) return "bad size " + std::to_string(a->size);
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return std::string("ascii ") + (a->message.ascii ? a->message.ascii : "(null)");
    case NVTX_MESSAGE_TYPE_REGISTERED: {
      const nvtxStringRegistration_st* s = a->message.registered;
      if (!s) return "bad null registered string";
      if (s->domain != domain) return "bad string of domain " + name_of(s->domain) + ": " + s->text;
      return "registered " + s->text;
    }
    default:
      return "bad message type " + std::to_string(a->messageType);
  }
}

int NVTX_API range_push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  record("push " + name_of(domain) + " " + message_of(domain, attributes));
  return thread_depth++;
}

int NVTX_API range_pop(nvtxDomainHandle_t domain) {
  record("pop " + name_of(domain));
  return thread_depth > 0 ? --thread_depth : NVTX_NO_PUSH_POP_TRACKING;
}

template <typename Fn>
void set(NvtxFunctionTable table, unsigned int size, unsigned int id, Fn fn) {
  if (id < size && table[id]) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace

extern "C" {

// Called once by each NVTX instance in the process, at its first NVTX call. Nonzero: attached.
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  if (!get_export_table) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (!callbacks || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) || !callbacks->GetModuleFunctionTable) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) || !table) return 0;
  set(table, size, NVTX_CBID_CORE2_DomainCreateA, &domain_create);
  set(table, size, NVTX_CBID_CORE2_DomainRegisterStringA, &register_string);
  set(table, size, NVTX_CBID_CORE2_DomainRangePushEx, &range_push);
  set(table, size, NVTX_CBID_CORE2_DomainRangePop, &range_pop);
  // Tools say which NVTX version they were built against (NVTX ignores it today).
  const auto* version = static_cast<const NvtxExportTableVersionInfo*>(get_export_table(NVTX_ETID_VERSIONINFO));
  if (version && version->struct_size >= sizeof(NvtxExportTableVersionInfo) && version->SetInjectionNvtxVersion) {
    version->SetInjectionNvtxVersion(NVTX_VERSION);
  }
  std::lock_guard<std::mutex> lock(registry_mutex);
  ++instances;
  return 1;
}

__attribute__((visibility("default"))) int tf_nvtx_capture_instances(void) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  return instances;
}

__attribute__((visibility("default"))) const char* tf_nvtx_capture_domains(void) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  thread_taken.clear();
  for (const auto& d : domains) thread_taken += d.name + "\n";
  return thread_taken.c_str();
}

__attribute__((visibility("default"))) const char* tf_nvtx_capture_take(void) {
  thread_taken.swap(thread_events);
  thread_events.clear();
  return thread_taken.c_str();
}

}  // extern "C"
