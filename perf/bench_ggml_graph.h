#pragma once
// One ggml graph for the side-by-side timings, computed by ggml's CPU backend. Its Q4_K weights
// live in a buffer of the given type: the plain CPU buffer (ggml's generic mul_mat, one vec_dot per
// output) or the CPU_REPACK extra buffer (weights interleaved at upload for ggml's gemm/gemv
// kernels: what llama.cpp does with model weights on the CPU). Activations and results live in a
// plain CPU buffer. Build: declare weights, inputs and ops, mark outputs, upload(), then compute().
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "perf/bench_ggml.h"

namespace ckjit::bench {

class GgmlGraph {
 public:
  GgmlGraph(const Ggml& g, void* weight_buft, int max_tensors = 256) : g_(g), weight_buft_(weight_buft) {
    const size_t meta = g.tensor_overhead() * size_t(max_tensors);
    weight_ctx_ = g.init({meta, nullptr, true});
    act_ctx_ = g.init({meta + g.graph_overhead(), nullptr, true});
    graph_ = g.new_graph(act_ctx_);
    backend_ = g.cpu_backend_init();
  }
  ~GgmlGraph() {
    if (backend_) g_.backend_free(backend_);
    for (void* b : {weight_buf_, act_buf_})
      if (b) g_.buffer_free(b);
    g_.free(act_ctx_);
    g_.free(weight_ctx_);
  }
  GgmlGraph(const GgmlGraph&) = delete;
  GgmlGraph& operator=(const GgmlGraph&) = delete;

  // `blocks`/`x` must stay alive until upload().
  void* weight_q4k(const void* blocks, int64_t k, int64_t n) { return declare(weight_ctx_, kGgmlQ4_K, k, n, blocks); }
  void* input_f32(const float* x, int64_t k, int64_t m) { return declare(act_ctx_, kGgmlF32, k, m, x); }
  void* mul_mat(void* w, void* x) { return g_.mul_mat(act_ctx_, w, x); }
  void* swiglu(void* gate, void* up) { return g_.swiglu_split(act_ctx_, gate, up); }
  void output(void* t) { g_.build_forward_expand(graph_, t); }

  // Allocates every tensor and copies the data in (a CPU_REPACK buffer repacks the weights here).
  bool upload() {
    weight_buf_ = g_.alloc_ctx_tensors_from_buft(weight_ctx_, weight_buft_);
    act_buf_ = g_.alloc_ctx_tensors_from_buft(act_ctx_, g_.cpu_buffer_type());
    if (!weight_buf_ || !act_buf_ || !backend_) return false;
    for (auto [t, data] : uploads_) g_.tensor_set(t, data, 0, g_.nbytes(t));
    uploads_.clear();
    return true;
  }
  bool compute(int threads) {
    g_.cpu_set_n_threads(backend_, threads);
    return g_.graph_compute(backend_, graph_) == 0;
  }
  const float* data(void* t) const { return static_cast<const float*>(g_.get_data(t)); }

 private:
  void* declare(void* ctx, int type, int64_t k, int64_t rows, const void* data) {
    void* t = g_.new_tensor_2d(ctx, type, k, rows);
    uploads_.emplace_back(t, data);
    return t;
  }
  const Ggml& g_;
  void* weight_buft_;
  void* weight_ctx_ = nullptr;
  void* act_ctx_ = nullptr;
  void* graph_ = nullptr;
  void* backend_ = nullptr;
  void* weight_buf_ = nullptr;
  void* act_buf_ = nullptr;
  std::vector<std::pair<void*, const void*>> uploads_;
};

}  // namespace ckjit::bench
