// `ckjit inspect FILE.gguf`: header, metadata and tensor table of a GGUF file (validated on open).
// `ckjit inspect --kernel SPEC`: the spec and generated code of one JIT kernel.
#include <boost/program_options.hpp>
#include <cinttypes>
#include <cstdio>
#include <iostream>
#include <map>

#include "jit/code_cache.h"
#include "runtime/error.h"
#include "runtime/gguf/gguf_reader.h"
#include "tools/command.h"

namespace po = boost::program_options;
using ckjit::gguf::GgufFile;

namespace {

std::string human_bytes(uint64_t n) {
  char buf[32];
  if (n >= (uint64_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", double(n) / double(1 << 30));
  else if (n >= (uint64_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", double(n) / double(1 << 20));
  else if (n >= 1024) std::snprintf(buf, sizeof buf, "%.2f KiB", double(n) / 1024.0);
  else std::snprintf(buf, sizeof buf, "%" PRIu64 " B", n);
  return buf;
}

void print_metadata(const GgufFile& f) {
  std::printf("\nmetadata (%zu keys):\n", f.metadata().size());
  size_t width = 0;
  for (const auto& kv : f.metadata()) width = std::max(width, std::min<size_t>(kv.key.size(), 60));
  for (const auto& kv : f.metadata()) {
    std::string key = ckjit::gguf::printable(kv.key, 100);
    std::printf("  %-*s  %-14s %s\n", int(width), key.c_str(), ckjit::gguf::describe_type(kv.value).c_str(),
                ckjit::gguf::to_display_string(kv.value, 6).c_str());
  }
}

void print_tensors(const GgufFile& f) {
  std::printf("\ntensors (%zu):\n", f.tensors().size());
  size_t width = 4;
  for (const auto& t : f.tensors()) width = std::max(width, t.name.size());
  std::printf("  %-*s  %-5s %-28s %14s %14s\n", int(width), "name", "type", "shape", "bytes", "offset");
  std::map<std::string, std::pair<size_t, uint64_t>> by_type;  // type -> (count, bytes)
  int64_t elements = 0;
  for (const auto& t : f.tensors()) {
    std::string name = ckjit::gguf::printable(t.name);
    std::printf("  %-*s  %-5s %-28s %14" PRIu64 " %14" PRIu64 "\n", int(width), name.c_str(), t.type.name,
                t.shape_string().c_str(), t.n_bytes, f.data_offset() + t.offset);
    auto& [count, bytes] = by_type[t.type.name];
    ++count;
    bytes += t.n_bytes;
    elements += t.n_elements;
  }
  std::printf("\ntotals: %zu tensors, %" PRId64 " elements, %" PRIu64 " bytes (%s)\n", f.tensors().size(), elements,
              f.total_tensor_bytes(), human_bytes(f.total_tensor_bytes()).c_str());
  for (const auto& [type, cb] : by_type) {
    std::printf("  %-5s %6zu tensors %14" PRIu64 " bytes (%s)\n", type.c_str(), cb.first, cb.second,
                human_bytes(cb.second).c_str());
  }
}

int inspect_main(const std::vector<std::string>& args) {
  po::options_description opts("ckjit inspect options");
  opts.add_options()
      ("kernel", po::value<std::string>(), "emit the JIT kernel SPEC (e.g. op=gemm,w=q4_K,a=q8_K,isa=avx512,k=4096) and dump its code")
      ("help,h", "show this help");
  po::options_description hidden;
  hidden.add_options()("file", po::value<std::string>(), "GGUF file");
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description positional;
  positional.add("file", 1);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
  } catch (const po::error& e) {
    throw ckjit::Error(e.what());
  }
  if (vm.count("help")) {
    std::cout << "usage: ckjit inspect FILE.gguf | ckjit inspect --kernel SPEC\n\n"
                 "Prints the header, metadata and tensor table of a GGUF file, or the spec and\n"
                 "disassembly (bytes when objdump is absent) of a generated kernel.\n"
              << opts;
    return 0;
  }
  if (vm.count("kernel")) {
    if (vm.count("file")) throw ckjit::Error("give either FILE or --kernel SPEC, not both");
    std::printf("%s", ckjit::jit::describe_kernel(vm["kernel"].as<std::string>()).c_str());
    return 0;
  }
  if (!vm.count("file")) throw ckjit::Error("missing FILE (usage: ckjit inspect FILE.gguf | --kernel SPEC)");

  GgufFile f = GgufFile::open(vm["file"].as<std::string>());
  std::printf("file: %s (%zu bytes, %s)\n", f.name().c_str(), f.file_size(), human_bytes(f.file_size()).c_str());
  std::printf("GGUF version %u, alignment %u, %zu metadata keys, %zu tensors, data at byte %" PRIu64 "\n",
              f.version(), f.alignment(), f.metadata().size(), f.tensors().size(), f.data_offset());
  print_metadata(f);
  print_tensors(f);
  return 0;
}

ckjit::cli::Register reg("inspect", "show the header, metadata and tensors of a GGUF file", inspect_main);

}  // namespace
