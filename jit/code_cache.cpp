#include "jit/code_cache.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "jit/emit_clock.h"
#include "jit/isa_select.h"
#include "runtime/error.h"

namespace ckjit::jit {

JitKernel::JitKernel(std::unique_ptr<GeneratedCode> code) : code_(std::move(code)) {
  entry_ = code_->make_executable();
  runnable_ = kernel_runs(code_->spec(), runtime_isa());
  if (std::getenv("CKJIT_PERF_MAP")) add_to_perf_map();
}

// `perf report` names JIT code from /tmp/perf-<pid>.map ("start size name" per line).
void JitKernel::add_to_perf_map() const {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  const std::string path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
  if (std::FILE* f = std::fopen(path.c_str(), "a")) {
    std::fprintf(f, "%llx %zx ckjit[%s]\n", (unsigned long long)(uintptr_t)entry_, code_->code_size(),
                 spec().to_string().c_str());
    std::fclose(f);
  }
}

void JitKernel::require_runnable() const {
  if (!runnable_)
    throw Error("kernel " + spec().to_string() + " needs " + isa_name(spec().isa) +
                ", which this CPU (or CKJIT_MAX_ISA) does not allow");
}

namespace {
std::atomic<int64_t> g_emit_ns{0}, g_emitted{0};
}  // namespace

EmitClock emit_clock() { return {double(g_emit_ns.load()) / 1e6, g_emitted.load()}; }

namespace {
size_t default_limit_bytes() {
  if (const char* e = std::getenv("CKJIT_CODE_CACHE_MB"); e && *e) {
    char* end = nullptr;
    const unsigned long long mb = std::strtoull(e, &end, 10);
    if (end && *end == 0 && mb > 0 && mb < (1ull << 20)) return size_t(mb) << 20;
  }
  return size_t(256) << 20;
}
}  // namespace

const JitKernel& CodeCache::get(const KernelSpec& spec) {
  std::string key = spec.to_string();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernels_.find(key);
  if (it != kernels_.end()) return *it->second;
  const auto t0 = std::chrono::steady_clock::now();
  auto k = std::make_unique<JitKernel>(emit_kernel(spec));
  // Under the lock, so the sum is emitting wall time even when the repack threads ask at once.
  g_emit_ns.fetch_add(int64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count()),
                      std::memory_order_relaxed);
  g_emitted.fetch_add(1, std::memory_order_relaxed);
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t bytes = (k->size() + page - 1) / page * page;
  if (limit_bytes_ == 0) limit_bytes_ = default_limit_bytes();
  if (code_bytes_ + bytes > limit_bytes_)
    throw Error("JIT code cache full: " + std::to_string((code_bytes_ + bytes) >> 20) + " MiB of generated code would pass its bound of " +
                std::to_string(limit_bytes_ >> 20) + " MiB (" + std::to_string(kernels_.size()) +
                " kernels; CKJIT_CODE_CACHE_MB raises it) while emitting " + key);
  code_bytes_ += bytes;
  return *kernels_.emplace(key, std::move(k)).first->second;
}

size_t CodeCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kernels_.size();
}

size_t CodeCache::code_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return code_bytes_;
}

size_t CodeCache::limit_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return limit_bytes_ ? limit_bytes_ : default_limit_bytes();
}

void CodeCache::set_limit_bytes(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  limit_bytes_ = bytes;
}

CodeCache& global_code_cache() {
  static CodeCache cache;
  return cache;
}

namespace {

bool have_objdump() { return std::system("command -v objdump >/dev/null 2>&1") == 0; }

std::string hex_dump(const uint8_t* p, size_t n) {
  std::ostringstream o;
  char buf[24];
  for (size_t i = 0; i < n; ++i) {
    if (i % 16 == 0) {
      std::snprintf(buf, sizeof buf, "%06zx:", i);
      o << (i ? "\n" : "") << buf;
    }
    std::snprintf(buf, sizeof buf, " %02x", p[i]);
    o << buf;
  }
  return o.str() + "\n";
}

std::string objdump(const uint8_t* p, size_t n, const char* machine) {
  char path[] = "/tmp/ckjit-kernel-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return hex_dump(p, n);
  bool ok = ::write(fd, p, n) == ssize_t(n);
  ::close(fd);
  std::string out;
  if (ok) {
    std::string cmd = std::string("objdump -D -b binary ") + machine + " --no-show-raw-insn " + path + " 2>&1";
    if (FILE* f = popen(cmd.c_str(), "r")) {
      char buf[4096];
      size_t got;
      while ((got = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, got);
      if (pclose(f) != 0) out.clear();
    }
  }
  ::unlink(path);
  return out.empty() ? hex_dump(p, n) : out;
}

}  // namespace

std::string describe_kernel(const std::string& spec_text) {
  KernelSpec spec = KernelSpec::parse(spec_text);
  const JitKernel& k = global_code_cache().get(spec);
  std::ostringstream o;
  o << "spec: " << spec.to_string() << "\n"
    << "code: " << k.size() << " bytes\n";
  const auto* p = static_cast<const uint8_t*>(k.entry());
  o << (have_objdump() ? objdump(p, k.size(), k.objdump_options()) : hex_dump(p, k.size()));
  return o.str();
}

}  // namespace ckjit::jit
