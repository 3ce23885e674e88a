// libFuzzer target for `ckjit serve`'s request bodies: an OpenAI /v1/chat/completions JSON body
// parsed and validated (messages, content parts, sampling fields, data: URIs through base64 and the
// image header check, response_format schemas through the schema compiler). Any input must give a request or an HttpError (a 4xx); any other exception,
// crash or sanitizer report is a bug. Local image paths stay refused (the fuzzer reads no files).
#include <cstddef>
#include <cstdint>
#include <string>

#include "include/ckjit.h"
#include "runtime/error.h"
#include "runtime/image/image.h"
#include "runtime/structured/gbnf.h"
#include "runtime/structured/json_schema.h"
#include "tools/serve/openai_request.h"

namespace {
thread_local std::string t_error;
}

// The two C API calls the parser makes, over the same runtime/image function the library uses
// (this build links no model code).
extern "C" ckjit_status ckjit_image_info(const void* data, size_t size, int32_t* width, int32_t* height) {
  try {
    ckjit::image::DecodeLimits any_size;
    any_size.max_pixels = INT64_MAX, any_size.max_side = INT32_MAX;
    const auto h = ckjit::image::read_header({static_cast<const uint8_t*>(data), size}, "image", any_size);
    *width = h.width, *height = h.height;
    return CKJIT_OK;
  } catch (const ckjit::Error& e) {
    t_error = e.what();
    return CKJIT_ERR_BAD_IMAGE;
  }
}
extern "C" ckjit_status ckjit_json_schema_check(const char* schema) {
  try {
    ckjit::structured::compile_json_schema(schema);
    return CKJIT_OK;
  } catch (const ckjit::Error& e) {
    t_error = e.what();
    return CKJIT_ERR_INVALID_ARGUMENT;
  }
}
extern "C" ckjit_status ckjit_grammar_check(const char* grammar) {
  try {
    ckjit::structured::compile_gbnf(grammar);
    return CKJIT_OK;
  } catch (const ckjit::Error& e) {
    t_error = e.what();
    return CKJIT_ERR_INVALID_ARGUMENT;
  }
}
extern "C" const char* ckjit_last_error(void) { return t_error.c_str(); }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ckjit::serve::RequestLimits limits;
  limits.max_images = 4;
  try {
    const auto r = ckjit::serve::parse_chat_request(std::string_view(reinterpret_cast<const char*>(data), size), limits);
    if (r.messages.empty() || r.images.size() > limits.max_images || r.max_tokens < 0) __builtin_trap();
  } catch (const ckjit::serve::HttpError& e) {
    if (e.status < 400 || e.status > 499) __builtin_trap();
  }
  return 0;
}
