#include "codegen/column_common.h"

#include <algorithm>

#include "codegen/kernel_name.h"

namespace torchfuse {
namespace codegen {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

}  // namespace

void emit_outputs_and_partials(SourceBuilder& b, const FusionGroup& g, const ReductionAnalysis& a) {
  for (size_t k = 0; k < g.outputs.size(); ++k) b.line(storage_type(g.outputs[k]->type.dtype) + "* " + output_name(k) + ";");
  for (const ir::Node* r : a.reductions) {
    b.line(accumulator_type(a, r, true) + "* part_" + accumulator_name(a, r) + ";  // partial results");
  }
  b.line("unsigned int* counters;  // finished blocks per split reduction (zero between launches)");
}

std::string result_in_register_type(SourceBuilder& b, const ir::Node& r, const std::string& accumulated) {
  const std::string acc_t = register_type(accumulator_dtype(r, true));
  const std::string out_t = register_type(register_dtype(r.output()->type.dtype));
  const std::string rounded = eager_rounded(r.output(), acc_t == out_t ? accumulated : "(" + out_t + ")" + accumulated, true, Rounding::Always);
  if (rounded == accumulated) return accumulated;
  const std::string name = accumulated + "_out";
  b.line("const " + out_t + " " + name + " = " + rounded + ";");
  return name;
}

void emit_column_params(SourceBuilder& b, const FusionGroup& g, const ReductionLayout& l, const ReductionAnalysis& a) {
  const auto rank = [](const std::vector<int64_t>& v) { return str(static_cast<int64_t>(std::max<size_t>(v.size(), 1))); };
  b.open("struct " + kNamePlaceholder + "_params");
  b.line("long long outer, red, inner;  // O, R, I: the domain is [O, R, I]");
  b.line("long long split;");
  b.line("long long outer_size[" + rank(l.outer_sizes) + "];");
  b.line("long long red_size[" + rank(l.red_sizes) + "];");
  b.line("long long inner_size[" + rank(l.inner_sizes) + "];");
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto& in = l.inputs[k];
    emit_operand_param(b, k, in.access == Access::Scalar, in.dtype);
    if (in.access == Access::Scalar || in.access == Access::Uniform) continue;
    b.line("long long " + input_name(k) + "_outer_stride[" + rank(l.outer_sizes) + "];");
    b.line("long long " + input_name(k) + "_red_stride[" + rank(l.red_sizes) + "];");
    b.line("long long " + input_name(k) + "_inner_stride[" + rank(l.inner_sizes) + "];");
  }
  emit_outputs_and_partials(b, g, a);
  // (Split column passes launched once per pass: which launch this is.)
  if (l.phased()) b.line("long long phase;");
  b.close(";");
}

void emit_segment(SourceBuilder& b, const ReductionLayout& l, const std::vector<int64_t>& sizes, const std::string& seg,
                  const std::string& index, const std::string& prefix) {
  b.line("tf_index " + prefix + "rem = " + index + ";");
  for (size_t d = sizes.size(); d-- > 0;) {
    const std::string dd = str(static_cast<int64_t>(d));
    const std::string c = prefix + "c" + dd;
    if (d == 0) {
      b.line("const tf_index " + c + " = " + prefix + "rem;");
    } else {
      b.line("const tf_index " + c + " = " + prefix + "rem % (tf_index)p." + seg + "_size[" + dd + "];");
      b.line(prefix + "rem /= (tf_index)p." + seg + "_size[" + dd + "];");
    }
  }
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto acc = l.inputs[k].access;
    if (acc == Access::Scalar || acc == Access::Uniform) continue;
    std::string off;
    for (size_t d = 0; d < sizes.size(); ++d) {
      off += " + " + prefix + "c" + str(static_cast<int64_t>(d)) + " * (tf_index)p." + input_name(k) + "_" + seg +
             "_stride[" + str(static_cast<int64_t>(d)) + "]";
    }
    b.line("const tf_index " + prefix + "off" + str(static_cast<int64_t>(k)) + " = 0" + off + ";");
  }
}

bool column_vector_input(const ReductionLayout& l, size_t k) {
  const auto& in = l.inputs[k];
  if (l.vec == 1 || in.access == Access::Scalar || in.access == Access::Uniform) return false;
  return in.inner_strides.size() == 1 && in.inner_strides[0] == 1;
}

std::string column_load(const ReductionLayout& l, size_t k, const std::string& slot) {
  const auto& in = l.inputs[k];
  const std::string kk = str(static_cast<int64_t>(k));
  if (in.access == Access::Scalar) return "p." + input_name(k);
  if (in.access == Access::Uniform) return load_convert(input_name(k) + "[0]", in.dtype);
  if (column_vector_input(l, k)) return load_convert("v" + kk + slot + ".v[lane]", in.dtype);
  std::string lane_off;
  if (l.vec > 1 && !in.inner_strides.empty()) lane_off = " + lane * (tf_index)p." + input_name(k) + "_inner_stride[0]";
  return load_convert(input_name(k) + "[ooff" + kk + " + ioff" + kk + " + roff" + kk + lane_off + "]", in.dtype);
}

bool column_element_input(const ReductionLayout& l, size_t k) {
  const Access acc = l.inputs[k].access;
  return acc == Access::InnerContig || acc == Access::Strided;
}

}  // namespace codegen
}  // namespace torchfuse
