#include "runtime/group_trace.h"

#include <nvtx3/nvToolsExt.h>

namespace torchfuse {
namespace runtime {
namespace {

nvtxDomainHandle_t domain() {
  static const nvtxDomainHandle_t d = nvtxDomainCreateA("torchfuse");
  return d;
}

}  // namespace

GroupTrace::GroupTrace(const std::string& kernel_name)
    : name_("torchfuse::" + kernel_name), nvtx_name_(nvtxDomainRegisterStringA(domain(), name_.c_str())) {}

GroupTrace::Range::Range(const GroupTrace& trace) {
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  if (trace.nvtx_name_) {
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = static_cast<nvtxStringHandle_t>(const_cast<void*>(trace.nvtx_name_));
  } else {
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = trace.name_.c_str();
  }
  nvtxDomainRangePushEx(domain(), &a);
}

GroupTrace::Range::~Range() { nvtxDomainRangePop(domain()); }

}  // namespace runtime
}  // namespace torchfuse
