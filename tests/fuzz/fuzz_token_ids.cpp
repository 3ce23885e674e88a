// libFuzzer target for `--force` id lists (runtime/token_ids.h): ids or a ckjit::Error, nothing else.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/error.h"
#include "runtime/token_ids.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto ids = ckjit::parse_token_ids(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    for (int32_t id : ids)
      if (id < 0) __builtin_trap();
  } catch (const ckjit::Error&) {
  }
  return 0;
}
