// A small streaming JSON writer for the tool's --json output: objects, arrays, strings escaped
// per RFC 8259 (control characters as \u00XX), numbers (non-finite ones as null).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace torchfuse_cli {

inline std::string json_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

class JsonWriter {
 public:
  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }
  // The key of the next value inside an object.
  JsonWriter& key(const std::string& k) {
    separate();
    out_ << json_escape(k) << ':';
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(const std::string& s) { return raw(json_escape(s)); }
  JsonWriter& value(const char* s) { return raw(json_escape(s)); }
  JsonWriter& value(bool b) { return raw(b ? "true" : "false"); }
  JsonWriter& value(int v) { return raw(std::to_string(v)); }
  JsonWriter& value(int64_t v) { return raw(std::to_string(v)); }
  JsonWriter& value(uint64_t v) { return raw(std::to_string(v)); }
  JsonWriter& value(double v) {
    if (!std::isfinite(v)) return raw("null");
    std::ostringstream s;
    s.precision(17);
    s << v;
    return raw(s.str());
  }
  JsonWriter& null() { return raw("null"); }
  template <typename T>
  JsonWriter& field(const std::string& k, const T& v) {
    key(k);
    return value(v);
  }
  template <typename T>
  JsonWriter& array(const std::string& k, const std::vector<T>& values) {
    key(k);
    begin_array();
    for (const auto& v : values) value(v);
    return end_array();
  }
  std::string str() const { return out_.str(); }

 private:
  JsonWriter& raw(const std::string& text) {
    separate();
    out_ << text;
    return *this;
  }
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_ << ',';
      first_.back() = false;
    }
  }
  JsonWriter& open(char c) {
    separate();
    out_ << c;
    first_.push_back(true);
    return *this;
  }
  JsonWriter& close(char c) {
    out_ << c;
    first_.pop_back();
    return *this;
  }

  std::ostringstream out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace torchfuse_cli
