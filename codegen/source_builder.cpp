#include "codegen/source_builder.h"

#include "src/error.h"

namespace torchfuse {
namespace codegen {

void SourceBuilder::line(const std::string& text) {
  if (!text.empty()) out_.append(static_cast<size_t>(indent_) * 2, ' ');
  out_ += text;
  out_ += '\n';
}

void SourceBuilder::raw(const std::string& text) { out_ += text; }

void SourceBuilder::open(const std::string& header) {
  line(header + " {");
  ++indent_;
}

void SourceBuilder::close(const std::string& suffix) {
  TORCHFUSE_INTERNAL_ASSERT(indent_ > 0, "close() without open()");
  --indent_;
  line("}" + suffix);
}

std::string SourceBuilder::fresh(const std::string& prefix) {
  return prefix + std::to_string(counters_[prefix]++);
}

}  // namespace codegen
}  // namespace torchfuse
