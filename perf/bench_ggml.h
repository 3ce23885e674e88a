#pragma once
// llama.cpp's ggml loaded at run time (dlopen) from the npm package @node-llama-cpp/linux-x64
// (tools/setup.sh unpacks it), for side-by-side timings. Only the few public C entry points the
// benchmark needs are declared here, with ggml's own signatures (ggml.h, ggml-backend.h,
// ggml-alloc.h, ggml-cpu.h); opaque ggml handles are void*.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace ckjit::bench {

struct GgmlInitParams { size_t mem_size; void* mem_buffer; bool no_alloc; };
enum GgmlType : int { kGgmlF32 = 0, kGgmlQ4_K = 12 };

class Ggml {
 public:
  // Loads libggml-base.so and the first libggml-cpu-<variant>.so of `variants` that loads and that
  // this CPU runs: a variant built for a newer CPU loads fine and dies of SIGILL later, so its own
  // ggml_backend_score() (0: this CPU lacks a feature it was built with) decides.
  Ggml(const std::string& dir, const std::vector<std::string>& variants) {
    base_ = dlopen((dir + "/libggml-base.so").c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!base_) { error_ = dlerror(); return; }
    std::string rejected;
    for (const auto& v : variants) {
      cpu_ = dlopen((dir + "/libggml-cpu-" + v + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
      int (*score)() = nullptr;
      if (cpu_ && sym(cpu_, "ggml_backend_score", score) && score() > 0) { variant_ = v; break; }
      if (cpu_) { dlclose(cpu_); cpu_ = nullptr; rejected += (rejected.empty() ? "" : ", ") + v; }
    }
    if (!cpu_) { error_ = "no libggml-cpu-*.so in " + dir + " runs on this CPU (rejected: " + rejected + ")"; return; }
    bool ok = sym(base_, "ggml_init", init) && sym(base_, "ggml_free", free) &&
              sym(base_, "ggml_new_tensor_2d", new_tensor_2d) && sym(base_, "ggml_mul_mat", mul_mat) &&
              sym(base_, "ggml_swiglu_split", swiglu_split) && sym(base_, "ggml_new_graph", new_graph) &&
              sym(base_, "ggml_build_forward_expand", build_forward_expand) &&
              sym(base_, "ggml_get_data", get_data) && sym(base_, "ggml_nbytes", nbytes) &&
              sym(base_, "ggml_tensor_overhead", tensor_overhead) && sym(base_, "ggml_graph_overhead", graph_overhead) &&
              sym(base_, "ggml_backend_cpu_buffer_type", cpu_buffer_type) &&
              sym(base_, "ggml_backend_alloc_ctx_tensors_from_buft", alloc_ctx_tensors_from_buft) &&
              sym(base_, "ggml_backend_tensor_set", tensor_set) && sym(base_, "ggml_backend_buffer_free", buffer_free) &&
              sym(base_, "ggml_backend_buft_name", buft_name) && sym(base_, "ggml_backend_graph_compute", graph_compute) &&
              sym(base_, "ggml_backend_free", backend_free) && sym(base_, "ggml_backend_reg_dev_get", reg_dev_get) &&
              sym(base_, "ggml_backend_reg_get_proc_address", reg_get_proc_address) &&
              sym(cpu_, "ggml_cpu_init", cpu_init) && sym(cpu_, "ggml_backend_cpu_init", cpu_backend_init) &&
              sym(cpu_, "ggml_backend_cpu_set_n_threads", cpu_set_n_threads) && sym(cpu_, "ggml_backend_cpu_reg", cpu_reg) &&
              sym(base_, "ggml_log_set", log_set);
    if (!ok) { error_ = "missing ggml symbol: " + std::string(dlerror()); return; }
    log_set(&Ggml::log, nullptr);
    cpu_init();
  }
  ~Ggml() {
    if (log_set) log_set(nullptr, nullptr);
  }
  Ggml(const Ggml&) = delete;
  Ggml& operator=(const Ggml&) = delete;

  // ggml's log lines "repack: repack tensor <name> with <layout>" since the last call: the proof
  // that a CPU_REPACK upload really interleaved the weights (and into which layout).
  static std::vector<std::string> take_repack_log() {
    std::vector<std::string> lines;
    lines.swap(repack_log());
    return lines;
  }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const std::string& variant() const { return variant_; }

  // The CPU device's extra buffer type named `name` ("CPU_REPACK": weights repacked at upload into
  // the interleaved layouts of ggml's gemm/gemv kernels, what llama.cpp uses for model weights on
  // the CPU), or nullptr; `found` lists the extra buffer types this build offers.
  void* extra_buffer_type(const std::string& name, std::string& found) const {
    using GetExtraBufts = void** (*)(void* device);
    void* reg = cpu_reg();
    void* dev = reg ? reg_dev_get(reg, 0) : nullptr;
    auto get = dev ? reinterpret_cast<GetExtraBufts>(reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts")) : nullptr;
    if (!get) { found = "ggml_backend_dev_get_extra_bufts not offered by the CPU backend"; return nullptr; }
    void* match = nullptr;
    found.clear();
    for (void** b = get(dev); b && *b; ++b) {
      std::string n = buft_name(*b);
      found += (found.empty() ? "" : ", ") + n;
      if (n == name) match = *b;
    }
    if (found.empty()) found = "none";
    return match;
  }

  void* (*init)(GgmlInitParams) = nullptr;
  void (*free)(void*) = nullptr;
  void* (*new_tensor_2d)(void*, int, int64_t, int64_t) = nullptr;
  void* (*mul_mat)(void*, void*, void*) = nullptr;
  void* (*swiglu_split)(void*, void*, void*) = nullptr;
  void* (*new_graph)(void*) = nullptr;
  void (*build_forward_expand)(void*, void*) = nullptr;
  void* (*get_data)(const void*) = nullptr;
  size_t (*nbytes)(const void*) = nullptr;
  size_t (*tensor_overhead)() = nullptr;
  size_t (*graph_overhead)() = nullptr;
  void* (*cpu_buffer_type)() = nullptr;
  void* (*alloc_ctx_tensors_from_buft)(void* ctx, void* buft) = nullptr;  // -> buffer
  void (*tensor_set)(void* tensor, const void* data, size_t offset, size_t size) = nullptr;
  void (*buffer_free)(void*) = nullptr;
  const char* (*buft_name)(void*) = nullptr;
  int (*graph_compute)(void* backend, void* graph) = nullptr;  // ggml_status, 0 = success
  void (*backend_free)(void*) = nullptr;
  void* (*reg_dev_get)(void* reg, size_t index) = nullptr;
  void* (*reg_get_proc_address)(void* reg, const char* name) = nullptr;
  void (*cpu_init)() = nullptr;
  void* (*cpu_backend_init)() = nullptr;
  void (*cpu_set_n_threads)(void* backend, int n) = nullptr;
  void* (*cpu_reg)() = nullptr;

 private:
  void (*log_set)(void (*)(int level, const char* text, void* user), void* user) = nullptr;

  // Keeps ggml's warnings and errors on stderr; collects the repack lines, drops other debug chatter.
  static void log(int level, const char* text, void*) {
    enum { kWarn = 3, kError = 4 };
    std::string t = text;
    if (t.rfind("repack: ", 0) == 0) {
      while (!t.empty() && t.back() == '\n') t.pop_back();
      repack_log().push_back(t);
    } else if (level == kWarn || level == kError) {
      std::fputs(text, stderr);
    }
  }
  static std::vector<std::string>& repack_log() {
    static std::vector<std::string> lines;
    return lines;
  }
  template <class F>
  bool sym(void* lib, const char* name, F& f) {
    f = reinterpret_cast<F>(dlsym(lib, name));
    return f != nullptr;
  }
  void* base_ = nullptr;
  void* cpu_ = nullptr;
  std::string variant_, error_;
};

}  // namespace ckjit::bench
