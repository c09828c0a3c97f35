#include "codegen/row_reduction.h"

#include <algorithm>
#include <functional>
#include <map>
#include <vector>

#include "codegen/cuda_types.h"
#include "codegen/kernel_name.h"
#include "codegen/reduction_common.h"
#include "codegen/row_prologue.h"
#include "src/error.h"

namespace torchfuse {
namespace codegen {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

bool per_row(Access a) { return a == Access::InnerBroadcast || a == Access::Uniform || a == Access::Scalar; }

struct RowKernel {
  SourceBuilder& b;
  const FusionGroup& g;
  const ReductionLayout& l;
  const ReductionAnalysis& a;
  std::set<const ir::Value*> cached;
  ValueNames names;
  ValueNames reciprocals;  // per-row 1 / divisor registers (PassEmitter::reciprocals)
  // Under reuse(): the element values each pass evaluates, and the first pass evaluating each
  // (ReductionAnalysis::pass_values / first_passes), computed once for the whole kernel.
  std::vector<std::vector<const ir::Value*>> values_of_pass;
  std::map<const ir::Value*, int> first_pass;
  // Looped rows: this pass loads l.unroll vectors a thread ahead (open_looped_step).
  bool unrolled = false;
  // Vector inputs no pass before the last reads whose vectors the first pass loads into
  // registers (early<k>[chunk]) for the passes that read them (choose_early_inputs).
  std::set<size_t> early;

  // Cached rows: inputs the first pass does not read (a layer norm's weight and bias, read after
  // the reductions) are loaded with its loads, so that the kernel waits for memory once, while
  // their registers fit ReductionLayout::early_registers, in input order; where more 16-bit
  // inputs qualify than ReductionLayout::early_narrow_inputs, none of those.
  void choose_early_inputs() {
    if (!l.cached || l.vec == 1 || l.early_registers <= 0) return;
    std::vector<size_t> candidates;
    int narrow = 0;
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      if (l.inputs[k].access != Access::InnerContig || l.inputs[k].staged || keeps_input(k) || reads_vectors(k, 0)) continue;
      bool read = false;
      for (int pass = 1; pass < a.passes; ++pass) read = read || reads_vectors(k, pass);
      if (!read) continue;
      candidates.push_back(k);
      narrow += c10::elementSize(l.inputs[k].dtype) == 2;
    }
    // Past the limit of 16-bit inputs, none of them is loaded early (ReductionLayout::early_narrow_inputs).
    const bool narrow_ok = l.early_narrow_inputs < 0 || narrow <= l.early_narrow_inputs;
    int used = 0;
    for (size_t k : candidates) {
      if (!narrow_ok && c10::elementSize(l.inputs[k].dtype) == 2) continue;
      const int regs = static_cast<int>((int64_t{l.chunks_per_thread} * l.vec * c10::elementSize(l.inputs[k].dtype) + 3) / 4);
      if (used + regs > l.early_registers) continue;
      used += regs;
      early.insert(k);
    }
  }

  std::string team_reduce(const ir::Node* r) {
    const std::string acc = accumulator_name(a, r);
    if (l.cluster > 1) {
      return "tf_cluster_reduce<" + str(l.block / 32) + ", " + str(l.cluster) + ">(" + acc + ", " + accumulator_functor(a, r) +
             ", smem_" + acc + ", &slot_" + acc + ")";
    }
    if (l.threads_per_row <= 32) {
      return "tf_warp_reduce<" + str(l.threads_per_row) + ">(" + acc + ", " + accumulator_functor(a, r) + ")";
    }
    if (l.shared_rounds) {  // published before the pass's barrier (emit_shared_round)
      return "tf_block_collect<" + str(l.block / 32) + ">(" + accumulator_functor(a, r) + ", smem_" + acc + " + red_half)";
    }
    return "tf_block_reduce<" + str(l.block / 32) + ">(" + acc + ", " + accumulator_functor(a, r) + ", smem_" + acc + ")";
  }

  // Which element values are kept in registers across passes (cached mode, unless only inputs are).
  Reuse reuse() const {
    if (!l.cached || l.cache_inputs) return Reuse::None;
    return l.cache_first_pass ? Reuse::FirstPass : Reuse::Values;
  }
  // Input k is kept in registers as loaded (vectors `kept<k>[chunk]`).
  bool keeps_input(size_t k) const {
    return l.cached && l.cache_inputs && !l.inputs[k].staged && a.reread_inputs.count(g.inputs[k]);
  }

  // Does `pass` read vector input k: from memory, or (kept inputs, after the first pass that
  // loads them into their registers) from there?
  bool reads_vectors(size_t k, int pass) const {
    if (l.vec == 1 || l.inputs[k].access != Access::InnerContig) return false;
    const ir::Value* v = g.inputs[k];
    const auto& values = values_of_pass.at(pass);
    if (std::find(values.begin(), values.end(), v) == values.end()) return false;
    return !cached.count(v) || first_pass.at(v) >= pass;
  }
  bool loads_from_memory(size_t k, int pass) const {
    if (early.count(k)) return pass == 0;
    if (!reads_vectors(k, pass) || l.inputs[k].staged) return false;
    return !keeps_input(k) || first_pass.at(g.inputs[k]) == pass;
  }
  // The L2 hint for input k's loads in `pass`: evict first after its last load (where no other
  // row reads its elements), evict last before a later pass reads them again; inputs other rows
  // read too (an attention mask) stay in L1 and last in L2 where the hints ask for it.
  LoadHint load_hint(size_t k, int pass) const {
    if (l.inputs[k].shared) return l.hints.keep_shared ? LoadHint::KeepShared : LoadHint::None;
    for (int later = pass + 1; later < a.passes; ++later)
      if (loads_from_memory(k, later)) return l.hints.keep_loads ? LoadHint::EvictLast : LoadHint::None;
    // Cached rows: what a pass before the last loads, later passes read in registers.
    if (l.hints.hold_loads && l.cached && pass + 1 < a.passes) return LoadHint::EvictLast;
    return l.hints.evict_loads ? LoadHint::EvictFirst : LoadHint::None;
  }

  std::string vector_type(size_t k) const { return "tf_vec<" + storage_type(l.inputs[k].dtype) + ", " + str(l.vec) + ">"; }
  std::string load_from_memory(size_t k, int pass, const std::string& j0) const {
    return vector_load(vector_type(k), input_name(k) + " + ro" + str(static_cast<int64_t>(k)) + " + " + j0, load_hint(k, pass));
  }

  // Loads one pass needs, as vectors: inputs first read in this pass (kept inputs: the first
  // pass loads them into their registers, every pass reads them there).
  void emit_vector_loads(int pass, const std::string& j0) {
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      const std::string kk = str(static_cast<int64_t>(k));
      const std::string vt = vector_type(k);
      if (early.count(k)) {
        if (pass == 0) b.line("early" + kk + "[k] = " + load_from_memory(k, 0, j0) + ";  // read by a later pass");
        else if (reads_vectors(k, pass)) b.line("const " + vt + " v" + kk + " = early" + kk + "[k];");
        continue;
      }
      if (!reads_vectors(k, pass)) continue;
      if (l.inputs[k].staged) {
        const std::string at = l.ring_chunk > 0 ? "(j0 - ring_j)" : "j0";  // ringed: the chunk's own columns
        b.line("const " + vt + " v" + kk + " = *reinterpret_cast<const " + vt + "*>(stage" + kk + " + " + at + ");");
        continue;
      }
      if (unrolled) {  // looped rows: loaded ahead (open_looped_step)
        b.line("const " + vt + " v" + kk + " = ahead" + kk + "[u];");
        continue;
      }
      const std::string from_memory = load_from_memory(k, pass, j0);
      if (!keeps_input(k)) {
        b.line("const " + vt + " v" + kk + " = " + from_memory + ";");
        continue;
      }
      if (loads_from_memory(k, pass)) b.line("kept" + kk + "[k] = " + from_memory + ";");
      b.line("const " + vt + " v" + kk + " = kept" + kk + "[k];");
    }
  }

  std::string load(size_t k) {
    const auto& in = l.inputs[k];
    const std::string kk = str(static_cast<int64_t>(k));
    if (per_row(in.access)) return "rin" + kk;
    if (in.access == Access::InnerContig && l.vec > 1) return load_convert("v" + kk + ".v[lane]", in.dtype);
    return load_convert(input_name(k) + "[ro" + kk + " + " + red_offset(l, k, "j") + "]", in.dtype);
  }

  PassEmitter pass_emitter() {
    PassEmitter pe{b, g, a, names, l.fast_math, [this](size_t k) { return load(k); },
                   [this](const ir::Value* v) -> std::string {
                     if (!cached.count(v)) return "";
                     return "cache" + str(g.local_id(v)) + "[k * " + str(l.vec) + " + lane]";
                   },
                   reuse()};
    pe.wide_sums = !l.cached;
    pe.chunk_sums = l.chunk_sums;
    pe.reciprocals = &reciprocals;
    pe.scan_chunk_totals = l.cached;
    return pe;
  }

  void emit_pass(int pass) {
    PassEmitter pe = pass_emitter();
    for (const ir::Node* r : online_sums(pass, /*from_cache=*/true)) pe.online_after_pass.insert(r);
    std::vector<size_t> element_outputs;
    for (size_t k = 0; k < g.outputs.size(); ++k)
      if (!a.is_row(g.outputs[k]) && a.level_of(g.outputs[k]) == pass) element_outputs.push_back(k);
    const std::string vec = str(l.vec);
    const std::string step = str(static_cast<int64_t>(l.threads_per_row) * l.vec);
    std::string loop;
    const bool ringed = l.ring_chunk > 0;  // the row's vectors inside a loop over its chunks
    const std::vector<const ir::Node*> scans = looped_scans(pass);
    unrolled = !l.cached && !ringed && l.unroll > 1 && scans.empty();  // (a scan's steps prefetch instead)
    if (l.cached) {
      b.line("#pragma unroll");
      loop = "for (int k = 0; k < " + str(l.chunks_per_thread) + "; ++k)";
    } else if (ringed) {
      open_ring_chunk(pass);
      loop = "for (tf_index j0 = ring_j + (tf_index)tl * " + vec + "; j0 < ring_end; j0 += " + step + ")";
    } else if (!scans.empty()) {  // every thread of the team takes every step (tf_block_scan_step)
      for (const ir::Node* s : scans) {
        const std::string t = register_type(scan_dtype(*s));
        b.line(t + " " + scan_name(a, s, "carry") + " = (" + t + ")0;  // the row's sum before the team's vectors");
      }
      for (size_t k : step_vector_inputs(pass)) {
        const std::string next = "next" + str(static_cast<int64_t>(k));
        b.line(vector_type(k) + " " + next + " = {};  // the first step's vector");
        b.line("if ((tf_index)tl * " + vec + " < (tf_index)p.cols) " + next + " = " + load_from_memory(k, pass, "(tf_index)tl * " + vec) + ";");
      }
      loop = "for (tf_index jb = 0; jb < (tf_index)p.cols; jb += " + step + ")";
    } else if (unrolled) {
      loop = "for (tf_index jb = (tf_index)tl * " + vec + "; jb < (tf_index)p.cols; jb += " + step + " * " + str(l.unroll) + ")";
    } else {
      loop = "for (tf_index j0 = (tf_index)tl * " + vec + "; j0 < (tf_index)p.cols; j0 += " + step + ")";
    }
    b.open(loop);
    int scopes = 1;
    if (l.cached) {
      b.line("const tf_index j0 = " + chunk_start() + ";");
      b.open(chunk_guard());
    } else if (!scans.empty()) {
      emit_looped_scan_bases(pass, scans);
      b.open("if (row_ok && j0 < (tf_index)p.cols)");
    } else {
      b.open("if (row_ok)");
      if (unrolled) scopes += open_looped_step(pass, step);
      b.line("const int k = 0;");
      b.line("(void)k;");
    }
    if (scans.empty()) emit_vector_loads(pass, "j0");  // (looped scans: loaded before their totals)
    for (const ir::Node* s : a.scans) {
      if (!evaluates_scan(s, pass)) continue;
      const auto t = scan_dtype(*s);
      b.line(register_type(t) + " " + scan_name(a, s, "run") + " = (" + register_type(t) + ")0;  // the chunk's running sum");
    }
    for (size_t k : element_outputs) {
      b.line(register_type(g.outputs[k]->type.dtype) + " o" + str(static_cast<int64_t>(k)) + "[" + vec + "];");
    }
    if (pe.chunk_sums) declare_chunk_sums(b, a, pass);
    declare_online_values(pass);
    b.line("#pragma unroll");
    {
      auto lanes = b.scope("for (int lane = 0; lane < " + vec + "; ++lane)");
      b.line("const tf_index j = j0 + lane;");
      b.line("(void)j;");
      pe.emit(pass, [&](size_t k, const std::string& e) { b.line("o" + str(static_cast<int64_t>(k)) + "[lane] = " + e + ";"); });
    }
    if (pe.chunk_sums) flush_chunk_sums(b, a, pass);
    fold_online_vectors(pass);
    for (size_t k : element_outputs) {
      const std::string kk = str(static_cast<int64_t>(k));
      const auto dt = g.outputs[k]->type.dtype;
      const std::string vt = "tf_vec<" + storage_type(dt) + ", " + vec + ">";
      for (const auto& line : pack_vector("s" + kk, "o" + kk, dt, l.vec)) b.line(line);
      // The hinted store takes up to 16 bytes: a float32 output of rows whose 16-bit inputs set
      // the vector width (8) stores 32 as a plain store (fuzz seed 1, program 82).
      const bool hinted = l.hints.evict_stores && static_cast<int64_t>(c10::elementSize(dt)) * l.vec <= 16;
      const std::string store = vector_store(vt, output_name(k) + " + row * " + cols() + " + j0", "s" + kk, hinted);
      b.line(l.exact ? "if (row_ok) " + store : store);
    }
    for (int i = 0; i < scopes; ++i) b.close();
    b.close();  // the loop over the row
    if (!ringed) return;
    if (pass == last_ring_pass()) {
      b.line("__syncthreads();  // every thread is done with this chunk: its slot takes the chunk a ring ahead");
      b.line("if (threadIdx.x == 0 && rq + " + str(l.ring_slots) + "u < ring_total) " + kNamePlaceholder + "_ring(p, rq + " +
             str(l.ring_slots) + "u, ring_chunks, ring_slot, &ring_bar[rq % " + str(l.ring_slots) + "u]);");
    }
    b.close();  // the loop over the chunks
  }

  // Looped rows: the scans `pass` evaluates. Each step of the pass's loop over the row first adds
  // up each thread's vector of their inputs, then scans the team's totals onto the row's carry.
  std::vector<const ir::Node*> looped_scans(int pass) const {
    std::vector<const ir::Node*> scans;
    if (l.cached) return scans;
    for (const ir::Node* s : a.scans)
      if (evaluates_scan(s, pass)) scans.push_back(s);
    return scans;
  }
  // The vector inputs a looped scan pass reads: each step takes the vectors the step before loaded
  // (next<k>) and loads the next step's, so that a load is in flight across the step's barrier.
  std::vector<size_t> step_vector_inputs(int pass) const {
    std::vector<size_t> ks;
    for (size_t k = 0; k < g.inputs.size(); ++k)
      if (reads_vectors(k, pass)) ks.push_back(k);
    return ks;
  }
  // Opens the step: its vectors serve the totals and the step's lanes; a thread past the row's end
  // loads the row's first vector (every thread takes the team's scan step) and adds nothing.
  void emit_looped_scan_bases(int pass, const std::vector<const ir::Node*>& scans) {
    const std::string step = str(int64_t{l.threads_per_row} * l.vec);
    b.line("const tf_index j0 = jb + (tf_index)tl * " + str(l.vec) + ";");
    b.line("const tf_index jn = j0 + " + step + " < (tf_index)p.cols ? j0 + " + step + " : 0;  // where the next step's vectors load from");
    b.line("const int k = 0;");
    b.line("(void)k;");
    for (size_t k : step_vector_inputs(pass)) {
      const std::string kk = str(static_cast<int64_t>(k));
      b.line("const " + vector_type(k) + " v" + kk + " = next" + kk + ";");
      b.line("next" + kk + " = " + load_from_memory(k, pass, "jn") + ";");
    }
    for (const ir::Node* s : scans) {
      const std::string t = register_type(scan_dtype(*s));
      b.line(t + " " + scan_name(a, s, "vt") + " = (" + t + ")0;");
    }
    {
      auto in_row = b.scope("if (row_ok && j0 < (tf_index)p.cols)");
      PassEmitter pe = pass_emitter();
      pe.totals_only = scans;
      b.line("#pragma unroll");
      auto lanes = b.scope("for (int lane = 0; lane < " + str(l.vec) + "; ++lane)");
      b.line("const tf_index j = j0 + lane;");
      b.line("(void)j;");
      pe.emit(pass, [](size_t, const std::string&) {});
    }
    for (const ir::Node* s : scans) {
      b.line(scan_name(a, s, "base") + "[0] = tf_block_scan_step<" + str(l.block / 32) + ">(" + scan_name(a, s, "vt") + ", " +
             scan_name(a, s, "carry") + ", smem_" + scan_name(a, s, "tot") + ", scan_step++);  // cumsum -> %" +
             str(s->output()->id));
    }
  }
  // Looped rows: a pass whose only work was a scan's chunk totals (its input's pass) has none.
  bool idle_pass(int pass) const {
    if (l.cached || a.scans.empty() || !looped_scans(pass).empty()) return false;
    for (const ir::Node* r : a.reductions)
      if (a.accumulate_pass(r) == pass) return false;
    for (const ir::Value* out : g.outputs)
      if (!a.is_row(out) && a.level_of(out) == pass) return false;
    return true;
  }

  // Does `pass` compute scan `s`'s output (rather than read it back from the register cache)?
  bool evaluates_scan(const ir::Node* s, int pass) const {
    const ir::Value* v = s->output();
    const auto& values = values_of_pass.at(pass);
    if (std::find(values.begin(), values.end(), v) == values.end()) return false;
    return !(first_pass.at(v) < pass && a.reusable(v, reuse()));
  }
  // After the pass that adds up scan `s`'s chunks: each chunk's base, across the team.
  void emit_team_scan(const ir::Node* s) {
    const std::string args = scan_name(a, s, "tot") + ", " + scan_name(a, s, "base");
    if (l.threads_per_row <= 32) {
      b.line("tf_team_scan<" + str(l.threads_per_row) + ">(" + args + ", tl);  // cumsum -> %" + str(s->output()->id));
      return;
    }
    b.line("tf_block_scan<" + str(l.block / 32) + ">(" + args + ", smem_" + scan_name(a, s, "tot") + ");  // cumsum -> %" +
           str(s->output()->id));
  }

  // Ringed rows: does `pass` read a ringed input; the last pass that does (it frees the chunks).
  bool reads_ring(int pass) const {
    for (size_t k = 0; k < g.inputs.size(); ++k)
      if (l.inputs[k].staged && reads_vectors(k, pass)) return true;
    return false;
  }
  int last_ring_pass() const {
    int last = -1;
    for (int pass = 0; pass < a.passes; ++pass)
      if (reads_ring(pass)) last = pass;
    return last;
  }
  // Ringed rows: opens the loop over the row's chunks; where the pass reads the ring, waits for
  // the chunk's copies (the n-th use of a slot completes its barrier's phase of parity n % 2) and
  // points each ringed input at its slice.
  void open_ring_chunk(int pass) {
    const std::string S = str(l.ring_slots);
    b.open("for (unsigned c = 0; c < ring_chunks; ++c)");
    b.line("const unsigned rq = ring_q + c;  // the block's chunk");
    b.line("const tf_index ring_j = (tf_index)c * " + str(l.ring_chunk) + ";");
    b.line("const tf_index ring_end = ring_j + " + str(l.ring_chunk) + " < (tf_index)p.cols ? ring_j + " + str(l.ring_chunk) +
           " : (tf_index)p.cols;");
    if (!reads_ring(pass)) return;
    b.line("unsigned char* const ring_slot = ring_smem + (rq % " + S + "u) * " + str(l.ring_slot_bytes()) + "u;");
    b.line("tf_mbar_wait(&ring_bar[rq % " + S + "u], (rq / " + S + "u) & 1u);");
    emit_stage_pointers("ring_slot", [&](size_t k) { return str(l.ring_chunk * l.staged_bytes_before(k)) + "u"; });
  }

  // Staged and ringed rows: a pointer (stage<k>) to each staged input's part of the shared-memory
  // buffer at `base`, `offset_of(k)` bytes in.
  void emit_stage_pointers(const std::string& base, const std::function<std::string(size_t)>& offset_of) {
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      if (!l.inputs[k].staged) continue;
      const std::string t = storage_type(l.inputs[k].dtype);
      b.line("const " + t + "* const stage" + str(static_cast<int64_t>(k)) + " = reinterpret_cast<const " + t + "*>(" + base + " + " +
             offset_of(k) + ");");
    }
  }

  // Looped rows with l.unroll > 1: each step first loads the pass's vectors for l.unroll
  // positions a team stride apart (ahead<k>[u]), so that that many loads per thread are in
  // flight, then works through them in order. Opens the loop over u and its bounds check (2).
  int open_looped_step(int pass, const std::string& step) {
    const std::string U = str(l.unroll);
    std::vector<size_t> loaded;
    for (size_t k = 0; k < g.inputs.size(); ++k)
      if (reads_vectors(k, pass)) loaded.push_back(k);
    for (size_t k : loaded) b.line(vector_type(k) + " ahead" + str(static_cast<int64_t>(k)) + "[" + U + "];");
    b.line("#pragma unroll");
    {
      auto loads = b.scope("for (int u = 0; u < " + U + "; ++u)");
      b.line("const tf_index j0 = jb + (tf_index)u * " + step + ";");
      if (!loaded.empty()) {
        auto in_row = b.scope("if (j0 < (tf_index)p.cols)");
        for (size_t k : loaded) b.line("ahead" + str(static_cast<int64_t>(k)) + "[u] = " + load_from_memory(k, pass, "j0") + ";");
      }
    }
    b.line("#pragma unroll");
    b.open("for (int u = 0; u < " + U + "; ++u)");
    b.line("const tf_index j0 = jb + (tf_index)u * " + step + ";");
    b.open("if (j0 < (tf_index)p.cols)");
    return 2;
  }

  void emit_row_phase(int level) {
    PassEmitter pe{b, g, a, names, l.fast_math, nullptr, nullptr, Reuse::None};
    pe.reciprocals = &reciprocals;
    pe.emit_row_phase(level, [&](size_t k, const std::string& e) {
      b.line("if (row_ok && tl == 0) " + output_name(k) + "[row] = " + store_convert(e, g.outputs[k]->type.dtype) + ";");
    });
  }

  // Cached mode: the row length, a constant in exact rows.
  std::string cols() const { return l.exact ? "(tf_index)" + str(l.team_span()) : "(tf_index)p.cols"; }
  // Cached mode: the scope of chunk k's work. Exact rows hold a column in every chunk, and a row
  // past the last reads row 0 (its offsets are clamped) and stores nothing: no condition, so
  // NVRTC issues the pass's loads back to back instead of one per branch.
  std::string chunk_guard() const { return l.exact ? "/* every chunk holds columns */" : "if (row_ok && j0 < " + cols() + ")"; }

  // Cached mode: the first element of this thread's chunk k.
  std::string chunk_start() const {
    return "((tf_index)k * " + str(int64_t{l.threads_per_row} * l.cluster) + " + tl) * " + str(l.vec);
  }

  // Online sums come in two ways. Where their values stay in the register cache anyway, the
  // pass takes the thread's max and the exps come after it, from the cache: one exp per value,
  // no rescale. Otherwise each vector is folded in as it is computed (its max, one rescale, its
  // exps: tf_online_add), so that no extra registers hold the values.
  // The online sums accumulating in `pass` that take their exps from the cache after it
  // (`from_cache`), or the others, in group order.
  std::vector<const ir::Node*> online_sums(int pass, bool from_cache) const {
    std::vector<const ir::Node*> sums;
    for (const ir::Node* r : a.reductions) {
      const OnlineSum* o = a.online_sum(r);
      if (!o || a.accumulate_pass(r) != pass) continue;
      if ((l.cached && cached.count(o->max->inputs[0])) == from_cache) sums.push_back(r);
    }
    return sums;
  }
  void declare_online_values(int pass) {
    for (const ir::Node* r : online_sums(pass, false)) b.line("float " + online_values(a, r) + "[" + str(l.vec) + "];");
  }
  void fold_online_vectors(int pass) {
    for (const ir::Node* r : online_sums(pass, false)) {
      b.line("tf_online_add(" + accumulator_name(a, r) + ", " + online_values(a, r) + ");");
    }
  }
  void add_online_exps_from_cache(int pass) {
    const std::vector<const ir::Node*> sums = online_sums(pass, true);
    if (sums.empty()) return;
    b.line("#pragma unroll");
    auto chunks = b.scope("for (int k = 0; k < " + str(l.chunks_per_thread) + "; ++k)");
    b.line("const tf_index j0 = " + chunk_start() + ";");
    auto valid = b.scope(chunk_guard());
    b.line("#pragma unroll");
    auto lanes = b.scope("for (int lane = 0; lane < " + str(l.vec) + "; ++lane)");
    for (const ir::Node* r : sums) {
      const std::string acc = accumulator_name(a, r);
      const std::string v = "cache" + str(g.local_id(a.online_sum(r)->max->inputs[0])) + "[k * " + str(l.vec) + " + lane]";
      b.line(acc + ".s += tf_exp_shifted(" + v + " - " + acc + ".m);  // online sum -> %" + str(r->output()->id));
    }
  }

  // Shared rounds: the warps' partials of every reduction this pass accumulates go into their
  // slots, then one barrier; team_reduce reads them back.
  void emit_shared_round(int pass) {
    if (!l.shared_rounds) return;
    TORCHFUSE_INTERNAL_ASSERT(l.threads_per_row == l.block && l.cluster == 1, "shared rounds need a block per row team");
    std::vector<std::string> ids;
    for (const ir::Node* r : a.reductions) {
      if (a.accumulate_pass(r) != pass || !a.has_accumulator(r)) continue;
      const std::string acc = accumulator_name(a, r);
      b.line("tf_block_publish(" + acc + ", " + accumulator_functor(a, r) + ", smem_" + acc + " + red_half);");
      ids.push_back("%" + str(r->output()->id));
    }
    if (ids.empty()) return;
    std::string list;
    for (const auto& id : ids) list += (list.empty() ? "" : ", ") + id;
    b.line("__syncthreads();  // one round for " + list);
  }

  // An online pair's team result: the max (-inf where every value was -inf) and the sum.
  void emit_online_result(const ir::Node* r) {
    const std::string pair = "ms" + reduction_index(a, r);
    b.line("const tf_max_sum " + pair + " = " + team_reduce(r) + ";");
    emit_online_results(b, a, r, pair, result_name(a, a.online_sum(r)->max), result_name(a, r), names);
  }

  void emit_body() {
    names[nullptr] = l.exact ? "(double)" + str(l.team_span()) : "(double)p.cols";  // N
    const int rpb = l.block / l.threads_per_row;
    if (l.cluster > 1) {
      // The row's team is the whole cluster: thread tl of C * block, one row per cluster.
      b.line("const int team = 0;");
      b.line("const int tl = (int)tf_cluster_rank() * " + str(l.block) + " + (int)threadIdx.x;");
    } else {
      b.line("const int team = threadIdx.x / " + str(l.threads_per_row) + ";");
      b.line("const int tl = threadIdx.x % " + str(l.threads_per_row) + ";");
    }
    b.line("(void)team;");
    if (l.threads_per_row > 32) {
      for (const ir::Node* r : a.reductions) {
        if (!a.has_accumulator(r)) continue;
        const std::string t = accumulator_type(a, r, !l.cached);
        const int halves = l.shared_rounds ? 2 : 1;  // shared rounds: a half per row group's parity
        b.line("__shared__ " + t + " smem_" + accumulator_name(a, r) + "[" + str(halves * l.block / 32) + "];");
        if (l.cluster > 1) b.line("__shared__ " + t + " slot_" + accumulator_name(a, r) + ";");
      }
      // (Looped rows: two halves, tf_block_scan_step.)
      const int64_t slots = int64_t{l.block / 32} * (l.cached ? l.chunks_per_thread : 2);
      for (const ir::Node* s : a.scans) {
        b.line("__shared__ " + register_type(scan_dtype(*s)) + " smem_" + scan_name(a, s, "tot") + "[" + str(slots) + "];");
      }
    }
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      if (l.inputs[k].access == Access::Scalar) continue;
      b.line("const " + storage_type(l.inputs[k].dtype) + "* __restrict__ " + input_name(k) + " = p." + input_name(k) + ";");
    }
    for (size_t k = 0; k < g.outputs.size(); ++k) {
      b.line(storage_type(g.outputs[k]->type.dtype) + "* __restrict__ " + output_name(k) + " = p." + output_name(k) + ";");
    }
    if (l.ring_chunk > 0) {
      b.line("__shared__ __align__(8) unsigned long long ring_bar[" + str(l.ring_slots) + "];");
      b.line("extern __shared__ __align__(128) unsigned char ring_smem[];");
    }
    if (l.stages > 0) {
      b.line("__shared__ __align__(8) unsigned long long stage_bar[" + str(l.stages) + "];");
      b.line("extern __shared__ __align__(128) unsigned char stage_smem[];");
    }
    const std::string first_row = l.cluster > 1 ? "(tf_index)(blockIdx.x / " + str(l.cluster) + ")" : "(tf_index)blockIdx.x * " + str(rpb);
    const std::string row_step = l.cluster > 1 ? "(tf_index)(gridDim.x / " + str(l.cluster) + ")" : "(tf_index)gridDim.x * " + str(rpb);
    if (l.stages > 0) emit_staging_start(first_row, row_step);
    if (l.ring_chunk > 0) emit_ring_start();
    if (l.shared_rounds) b.line("unsigned row_it = 0;  // row groups this block has taken (shared rounds: the slots' half)");
    if (!l.cached && !a.scans.empty()) b.line("unsigned scan_step = 0;  // the block's team scan steps (their parity picks a half)");
    auto rows = b.scope("for (tf_index row0 = " + first_row + "; row0 < (tf_index)p.rows; row0 += " + row_step +
                        (l.shared_rounds ? ", ++row_it)" : ")"));
    if (l.shared_rounds) b.line("const int red_half = (int)(row_it & 1u) * " + str(l.block / 32) + ";");
    b.line("const tf_index row = row0 + team;");
    b.line("const bool row_ok = row < (tf_index)p.rows;");
    if (l.stages > 0) emit_staged_rows(row_step);
    emit_row_offsets(b, l, "row_ok ? row : 0", "");
    if (l.prefetch) emit_next_row_prefetch(b, l, row_step);
    // Per-row inputs: one value per row.
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      const auto& in = l.inputs[k];
      if (!per_row(in.access)) continue;
      const std::string kk = str(static_cast<int64_t>(k));
      std::string e;
      if (in.access == Access::Scalar) e = "p." + input_name(k);
      else if (in.access == Access::Uniform) e = load_convert(input_name(k) + "[0]", in.dtype);
      else e = load_convert(input_name(k) + "[row_ok ? ro" + kk + " : 0]", in.dtype);
      const std::string name = "rin" + kk;
      b.line(register_type(g.inputs[k]->type.dtype) + " " + name + " = " + e + ";");
      names[g.inputs[k]] = name;
    }
    // In group order: the source (and with it the kernel's name and cache key) must not depend on
    // pointer values or on how the graph numbers its values.
    std::vector<const ir::Value*> in_order(cached.begin(), cached.end());
    std::sort(in_order.begin(), in_order.end(),
              [this](const ir::Value* x, const ir::Value* y) { return g.local_id(x) < g.local_id(y); });
    for (const ir::Value* v : in_order) {
      b.line(register_type(v->type.dtype) + " cache" + str(g.local_id(v)) + "[" + str(l.chunks_per_thread * l.vec) + "];");
    }
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      if (!keeps_input(k)) continue;
      b.line("tf_vec<" + storage_type(l.inputs[k].dtype) + ", " + str(l.vec) + "> kept" + str(static_cast<int64_t>(k)) + "[" +
             str(l.chunks_per_thread) + "];");
    }
    for (size_t k : early) b.line(vector_type(k) + " early" + str(static_cast<int64_t>(k)) + "[" + str(l.chunks_per_thread) + "];");
    for (const ir::Node* s : a.scans) {
      const std::string t = register_type(scan_dtype(*s));
      if (!l.cached) {
        b.line(t + " " + scan_name(a, s, "base") + "[1];  // before this thread's vector");
        continue;
      }
      const std::string c = "[" + str(l.chunks_per_thread) + "]";
      b.line(t + " " + scan_name(a, s, "tot") + c + " = {};  // per chunk of the thread");
      b.line(t + " " + scan_name(a, s, "base") + c + ";");
    }
    for (int pass = 0; pass <= a.passes; ++pass) {
      emit_row_phase(pass);
      if (pass == a.passes) break;
      for (const ir::Node* r : a.reductions) {
        if (a.accumulate_pass(r) != pass || !a.has_accumulator(r)) continue;
        b.line(accumulator_type(a, r, !l.cached) + " " + accumulator_name(a, r) + " = " + accumulator_identity(a, r, !l.cached) + ";");
      }
      if (!idle_pass(pass)) emit_pass(pass);
      add_online_exps_from_cache(pass);
      emit_shared_round(pass);
      for (const ir::Node* r : a.reductions) {
        if (a.accumulate_pass(r) != pass || !a.has_accumulator(r)) continue;
        if (a.online_sum(r)) {
          emit_online_result(r);
          continue;
        }
        const std::string name = result_name(a, r);
        const auto out = register_dtype(r->output()->type.dtype);
        const std::string total = "(" + register_type(out) + ")" + team_reduce(r);
        b.line("const " + register_type(out) + " " + name + " = " + eager_rounded(r->output(), total, true, Rounding::Always) + ";  // %" +
               str(r->output()->id));
        names[r->output()] = name;
      }
      for (const ir::Node* r : a.reductions) {
        if (a.accumulate_pass(r) == pass && a.duplicate_of(r)) names[r->output()] = names.at(a.duplicate_of(r)->output());
      }
      for (const ir::Node* s : a.scans)
        if (l.cached && a.level_of(s->inputs[0]) == pass) emit_team_scan(s);
    }
    if (l.stages > 0) emit_staged_row_end();
    if (l.ring_chunk > 0) b.line("ring_q += ring_chunks;");
  }

  // Ringed rows: the slots' barriers, the block's chunk count (rows blockIdx.x, + gridDim.x, ...),
  // and the first chunks, one per slot, start loading.
  void emit_ring_start() {
    TORCHFUSE_INTERNAL_ASSERT(l.cluster == 1 && l.threads_per_row == l.block, "ringed rows need a block per row");
    {
      auto init = b.scope("if (threadIdx.x == 0)");
      b.line("for (int s = 0; s < " + str(l.ring_slots) + "; ++s) tf_mbar_init(&ring_bar[s]);");
      b.line("tf_mbar_init_fence();");
    }
    b.line("__syncthreads();");
    b.line("const unsigned ring_chunks = (unsigned)(((tf_index)p.cols + " + str(l.ring_chunk - 1) + ") / " + str(l.ring_chunk) +
           ");  // per row");
    b.line("const unsigned ring_rows = (tf_index)blockIdx.x < (tf_index)p.rows ? (unsigned)(((tf_index)p.rows - 1 - "
           "(tf_index)blockIdx.x) / (tf_index)gridDim.x) + 1u : 0u;");
    b.line("const unsigned ring_total = ring_rows * ring_chunks;  // the block's chunks");
    b.line("if (threadIdx.x == 0)");
    b.line("  for (unsigned q = 0; q < " + str(l.ring_slots) + "u && q < ring_total; ++q) " + kNamePlaceholder +
           "_ring(p, q, ring_chunks, ring_smem + q * " + str(l.ring_slot_bytes()) + "u, &ring_bar[q]);");
    b.line("unsigned ring_q = 0;  // the current row's first chunk");
  }

  // Staged rows: a ring of l.stages buffers, one barrier each. Before the loop, the block's first
  // l.stages - 1 row groups start loading into buffers 0, 1, ...
  void emit_staging_start(const std::string& first_row, const std::string& row_step) {
    b.line("const unsigned stage_block_bytes = (unsigned)p.cols * " + str(l.staged_bytes_per_column()) + "u * " +
           str(l.block / l.threads_per_row) + "u;");
    {
      auto init = b.scope("if (threadIdx.x == 0)");
      for (int s = 0; s < l.stages; ++s) b.line("tf_mbar_init(&stage_bar[" + str(s) + "]);");
      b.line("tf_mbar_init_fence();");
    }
    b.line("__syncthreads();");
    if (l.stages > 1) {
      auto ahead = b.scope("for (int s = 0; s < " + str(l.stages - 1) + "; ++s)");
      b.line("const tf_index ahead = " + first_row + " + (tf_index)s * " + row_step + ";");
      b.line("if (threadIdx.x == 0 && ahead < (tf_index)p.rows) " + kNamePlaceholder +
             "_stage(p, ahead, stage_smem + (unsigned)s * stage_block_bytes, &stage_bar[s]);");
    }
    b.line("unsigned stage_it = 0;  // row groups this block has taken");
  }
  // At the top of each row group: the group l.stages - 1 ahead starts loading into the buffer the
  // previous group used (its readers finished before the __syncthreads that ended it); then this
  // group's copies are waited for (the k-th use of a barrier completes its phase of parity k % 2),
  // and each staged input's row gets a pointer.
  void emit_staged_rows(const std::string& row_step) {
    const std::string S = str(l.stages);
    b.line("const unsigned stage_buf = stage_it % " + S + "u;");
    b.line("const unsigned stage_next = (stage_it + " + str(l.stages - 1) + "u) % " + S + "u;");
    b.line("const tf_index stage_row = row0 + (tf_index)" + str(l.stages - 1) + " * " + row_step + ";");
    b.line("if (threadIdx.x == 0 && stage_row < (tf_index)p.rows) " + kNamePlaceholder +
           "_stage(p, stage_row, stage_smem + stage_next * stage_block_bytes, &stage_bar[stage_next]);");
    b.line("tf_mbar_wait(&stage_bar[stage_buf], (stage_it / " + S + "u) & 1u);");
    b.line("unsigned char* const stage_team = stage_smem + stage_buf * stage_block_bytes + (unsigned)team * (unsigned)p.cols * " +
           str(l.staged_bytes_per_column()) + "u;");
    emit_stage_pointers("stage_team", [&](size_t k) { return staged_offset(l, k); });
  }
  // At the end of each row group: every thread is done with its buffer.
  void emit_staged_row_end() {
    b.line("__syncthreads();  // this row group's buffer is free again");
    b.line("++stage_it;");
  }
};

}  // namespace

bool scans_fit(const ReductionLayout& l, const ReductionAnalysis& a) {
  if (l.cluster != 1 || l.stages != 0 || l.ring_chunk != 0) return false;
  if (l.cached) return l.chunks_per_thread <= 16 && (l.threads_per_row <= 32 || l.threads_per_row == l.block);
  return l.threads_per_row == l.block && !a.scan_of_scan;
}

GeneratedKernel generate_row_reduction(const FusionGroup& g, const ReductionAnalysis& a, const ReductionLayout& l) {
  SourceBuilder b;
  b.raw(prelude());
  b.line("");
  emit_row_header(b, g, l, a);
  b.line(std::string("typedef ") + (l.index64 ? "long long" : "int") + " tf_index;");
  b.line("");
  emit_row_params(b, g, l);
  b.line("");
  emit_red_offset_helpers(b, g, l);
  emit_stage_function(b, g, l);
  emit_ring_function(b, g, l);
  if (!a.scans.empty()) {
    // (The planner refuses other layouts: RowUnit::plan.)
    TORCHFUSE_INTERNAL_ASSERT(scans_fit(l, a), "a scan's row kernel needs a team of one block or warp (rows in registers) or of one block (looped rows)");
    b.raw(scan_prelude());
  }
  std::set<const ir::Value*> cached;
  if (l.cached && !l.cache_inputs) cached = l.cache_first_pass ? a.cached_first : a.cached;
  RowKernel rk{b, g, l, a, cached, {}, {}, {}, {}, {}, {}};
  for (int pass = 0; pass < a.passes; ++pass) rk.values_of_pass.push_back(a.pass_values(g, pass, rk.reuse()));
  rk.first_pass = a.first_passes(g, rk.reuse());
  rk.choose_early_inputs();
  {
    auto s = b.scope("extern \"C\" __global__ void __launch_bounds__(" + str(l.block) +
                     (l.min_blocks > 0 ? ", " + str(l.min_blocks) : std::string()) + ") " + kNamePlaceholder + "(const " +
                     kNamePlaceholder + "_params p)");
    emit_grid_dependency(b);
    rk.emit_body();
  }
  return name_kernel(b.str(), g.pattern, l.block);
}

}  // namespace codegen
}  // namespace torchfuse
