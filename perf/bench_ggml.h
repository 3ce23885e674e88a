#pragma once
// llama.cpp's ggml loaded at run time (dlopen) from the npm package @node-llama-cpp/linux-x64
// (tools/setup.sh unpacks it), for side-by-side timings. Only the few public C entry points the
// benchmark needs are declared here, with ggml's own signatures.
#include <dlfcn.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ckjit::bench {

struct GgmlInitParams { size_t mem_size; void* mem_buffer; bool no_alloc; };
enum GgmlType : int { kGgmlF32 = 0, kGgmlQ4_K = 12 };

class Ggml {
 public:
  // Loads libggml-base.so and the first libggml-cpu-<variant>.so of `variants` that loads.
  Ggml(const std::string& dir, const std::vector<std::string>& variants) {
    base_ = dlopen((dir + "/libggml-base.so").c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!base_) { error_ = dlerror(); return; }
    for (const auto& v : variants) {
      cpu_ = dlopen((dir + "/libggml-cpu-" + v + ".so").c_str(), RTLD_NOW | RTLD_GLOBAL);
      if (cpu_) { variant_ = v; break; }
    }
    if (!cpu_) { error_ = "no usable libggml-cpu-*.so in " + dir; return; }
    bool ok = sym(base_, "ggml_init", init) && sym(base_, "ggml_free", free) &&
              sym(base_, "ggml_new_tensor_2d", new_tensor_2d) && sym(base_, "ggml_mul_mat", mul_mat) &&
              sym(base_, "ggml_swiglu_split", swiglu_split) && sym(base_, "ggml_new_graph", new_graph) &&
              sym(base_, "ggml_build_forward_expand", build_forward_expand) &&
              sym(base_, "ggml_get_data", get_data) && sym(base_, "ggml_nbytes", nbytes) &&
              sym(cpu_, "ggml_cpu_init", cpu_init) && sym(cpu_, "ggml_graph_compute_with_ctx", compute);
    if (!ok) { error_ = "missing ggml symbol: " + std::string(dlerror()); return; }
    cpu_init();
  }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const std::string& variant() const { return variant_; }

  void* (*init)(GgmlInitParams) = nullptr;
  void (*free)(void*) = nullptr;
  void* (*new_tensor_2d)(void*, int, int64_t, int64_t) = nullptr;
  void* (*mul_mat)(void*, void*, void*) = nullptr;
  void* (*swiglu_split)(void*, void*, void*) = nullptr;
  void* (*new_graph)(void*) = nullptr;
  void (*build_forward_expand)(void*, void*) = nullptr;
  void* (*get_data)(const void*) = nullptr;
  size_t (*nbytes)(const void*) = nullptr;
  void (*cpu_init)() = nullptr;
  int (*compute)(void*, void*, int) = nullptr;

 private:
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
