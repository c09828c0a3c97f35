#pragma once

namespace torchfuse {
// Part of every kernel cache key: a new version never reuses an older version's cubins.
constexpr const char* kVersion = "0.1.0";
}  // namespace torchfuse
