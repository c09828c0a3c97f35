// An indent-aware builder for generated source: lines, nested scopes, and deterministic fresh
// names (t0, t1, ...) so that the same group always yields the same text.
#pragma once

#include <map>
#include <string>

namespace torchfuse {
namespace codegen {

class SourceBuilder {
 public:
  // Appends one line at the current indentation ("" gives an empty line).
  void line(const std::string& text);
  // Appends raw text as is (the prelude).
  void raw(const std::string& text);
  // "header {" and indents until the matching close().
  void open(const std::string& header);
  void close(const std::string& suffix = "");
  // A new name with this prefix: prefix0, prefix1, ... in order of request.
  std::string fresh(const std::string& prefix);
  const std::string& str() const { return out_; }

  // RAII scope: open() now, close() at the end of the C++ scope.
  class Scope {
   public:
    Scope(SourceBuilder& b, const std::string& header) : b_(b) { b_.open(header); }
    ~Scope() { b_.close(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    SourceBuilder& b_;
  };
  Scope scope(const std::string& header) { return Scope(*this, header); }

 private:
  std::string out_;
  int indent_ = 0;
  std::map<std::string, int> counters_;
};

}  // namespace codegen
}  // namespace torchfuse
