// The C interface of tests/nvtx_capture.cpp, an NVTX injection library for the tests: what a
// process's NVTX calls reached it with, as Nsight Systems would see them.
//
// NVTX3 (header-only) loads the library named by NVTX_INJECTION64_PATH at the first NVTX call of
// each copy of its headers' implementation in the process (one per shared library or executable
// that includes them) and calls its InitializeInjectionNvtx2; the library then takes over the
// domain functions (nvtxDomainCreateA, nvtxDomainRegisterStringA, nvtxDomainRangePushEx,
// nvtxDomainRangePop) and records them. The library is loaded with dlopen(RTLD_LOCAL), so a test
// reaches these functions through dlopen(path, RTLD_NOLOAD) and dlsym (tests/test_nvtx.cpp).
#pragma once

extern "C" {

// How many NVTX instances attached the library (0 before the first NVTX call).
typedef int (*tf_nvtx_capture_instances_fn)(void);
#define TF_NVTX_CAPTURE_INSTANCES "tf_nvtx_capture_instances"

// The names of the domains created so far, in order, one a line.
typedef const char* (*tf_nvtx_capture_domains_fn)(void);
#define TF_NVTX_CAPTURE_DOMAINS "tf_nvtx_capture_domains"

// The calling thread's events since its last take, one a line, and forgets them:
//   domain <name>                      nvtxDomainCreateA
//   string <domain> <text>             nvtxDomainRegisterStringA
//   push <domain> registered <text>    nvtxDomainRangePushEx with a registered string
//   push <domain> ascii <text>         ... with an ASCII message
//   push <domain> bad <why>            ... with attributes a tool cannot read (version, size,
//                                      message type, a string of another domain)
//   pop <domain>                       nvtxDomainRangePop
// The text stays valid until the thread's next call.
typedef const char* (*tf_nvtx_capture_take_fn)(void);
#define TF_NVTX_CAPTURE_TAKE "tf_nvtx_capture_take"

}  // extern "C"
