#include "codegen/kernel_name.h"

#include <cctype>
#include <cstdint>
#include <cstdio>

#include "src/error.h"

namespace torchfuse {
namespace codegen {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// Where the `//` comment of `line` starts (npos: none), skipping string and character literals
// (inline assembly holds "%0" and could hold "//").
size_t comment_start(const std::string& text, size_t begin, size_t end) {
  char quote = 0;
  for (size_t i = begin; i < end; ++i) {
    const char c = text[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      continue;
    }
    if (c == '/' && i + 1 < end && text[i + 1] == '/') return i;
  }
  return std::string::npos;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Appends comment text [begin, end) without the digits of "%<digits>" and "group <digits>".
void append_canonical_comment(std::string& out, const std::string& text, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) {
    const char c = text[i];
    const bool number = std::isdigit(static_cast<unsigned char>(c)) != 0;
    if (number && (ends_with(out, "%") || ends_with(out, "group "))) {
      while (i + 1 < end && std::isdigit(static_cast<unsigned char>(text[i + 1]))) ++i;
      continue;
    }
    out += c;
  }
}

uint64_t fnv1a_mixed(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  // splitmix64's finalizer: every output bit depends on every input bit.
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

}  // namespace

std::string canonical_source(const std::string& source) {
  std::string out;
  out.reserve(source.size());
  for (size_t pos = 0; pos < source.size();) {
    size_t end = source.find('\n', pos);
    if (end == std::string::npos) end = source.size();
    const size_t comment = comment_start(source, pos, end);
    const size_t code_end = comment == std::string::npos ? end : comment;
    out.append(source, pos, code_end - pos);
    if (comment != std::string::npos) append_canonical_comment(out, source, comment, end);
    if (end < source.size()) out += '\n';
    pos = end + 1;
  }
  return out;
}

std::string short_hash(const std::string& text) {
  char hex[9];
  std::snprintf(hex, sizeof(hex), "%08x", static_cast<unsigned>(fnv1a_mixed(text) & 0xffffffffu));
  return hex;
}

std::string kernel_name_for(const std::string& pattern, const std::string& source) {
  return "tf_" + (pattern.empty() ? std::string("fused") : pattern) + "_" + short_hash(canonical_source(source));
}

GeneratedKernel name_kernel(std::string source, const std::string& pattern, int block_size) {
  GeneratedKernel k;
  k.name = kernel_name_for(pattern, source);
  size_t replaced = 0;
  for (size_t at = source.find(kNamePlaceholder); at != std::string::npos;
       at = source.find(kNamePlaceholder, at + k.name.size())) {
    source.replace(at, kNamePlaceholder.size(), k.name);
    ++replaced;
  }
  TORCHFUSE_INTERNAL_ASSERT(replaced > 0, "generated kernel ", k.name, " never names its entry point");
  k.source = std::move(source);
  k.block_size = block_size;
  k.grid_dependency = count(k.source, kGridDependencyCall) >= count(k.source, "__global__");
  k.id = next_kernel_id();
  return k;
}

}  // namespace codegen
}  // namespace torchfuse
