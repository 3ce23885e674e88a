#pragma once
// One exception type for every user-facing failure (bad file, bad input, missing ISA).
// The CLI catches it at the top, prints the message and exits non-zero; nothing below
// main ever prints an error and keeps going.
//
// A library message that suggests a remedy names the library's parameter as `$name` (e.g.
// "raise $n_ctx"): what() says it as the library does (the C API's field names: "raise n_ctx"),
// and a client with other names renders the message in its own terms (the CLI's flags:
// "raise -c", tools/cli_terms.h). The kind lets each client map the failure to its own status
// (the C API's ckjit_status).
#include <cctype>
#include <functional>
#include <stdexcept>
#include <string>

namespace ckjit {

enum class ErrorKind { general, invalid_argument, io, bad_model, bad_image, no_vision, context_full, out_of_memory, unsupported, cancelled };

// Renders one `$name` parameter of a message; return "" to keep the library's term.
using ParamTerms = std::function<std::string(const std::string& name)>;

// The parameters a library message may name, and how the library itself says them; nullptr for a
// name that is none (a path quoting '$' stays as it is).
inline const char* library_term(const std::string& name) {
  static const struct { const char *name, *term; } table[] = {
      {"n_ctx", "n_ctx"}, {"n_batch", "n_batch"}, {"n_threads", "n_threads"}, {"image_min_tokens", "image_min_tokens"},
      {"image_max_tokens", "image_max_tokens"}, {"mmproj", "the mmproj path"}, {"max_isa", "max_isa"},
      {"no_memory_check", "check_memory = false"}, {"prompt", "text or an image"}, {"forced", "forced ids"},
      {"repeat_penalty", "repeat_penalty"}, {"top_p", "top_p"}, {"min_p", "min_p"}, {"logit_bias", "logit_bias"},
      {"frequency_penalty", "frequency_penalty"}, {"presence_penalty", "presence_penalty"}, {"n_sessions", "n_sessions"}};
  for (const auto& t : table)
    if (name == t.name) return t.term;
  return nullptr;
}

// The message with every `$name` of a library parameter replaced by terms(name), or by the library's term.
inline std::string render_params(const std::string& text, const ParamTerms& terms) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    size_t j = i + 1;
    while (text[i] == '$' && j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
    const char* lib = text[i] == '$' && j > i + 1 ? library_term(text.substr(i + 1, j - i - 1)) : nullptr;
    if (!lib) {
      out += text[i];
      continue;
    }
    const std::string term = terms ? terms(text.substr(i + 1, j - i - 1)) : std::string();
    out += term.empty() ? lib : term;
    i = j - 1;
  }
  return out;
}

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, ErrorKind kind = ErrorKind::general)
      : std::runtime_error(render_params(what, nullptr)), text_(what), kind_(kind) {}
  ErrorKind kind() const { return kind_; }
  // The same message as another kind (its parameters still renderable), for a layer that knows
  // better what failed (an image's decoder error is a bad image).
  Error as(ErrorKind kind) const { return Error(text_, kind); }
  // The message in a client's terms for the parameters it names.
  std::string in_terms(const ParamTerms& terms) const { return render_params(text_, terms); }

 private:
  std::string text_;
  ErrorKind kind_;
};

// Runs f; a plain (general) Error it throws comes out as `kind`, a kinded one keeps its kind: the
// layer that knows what failed says so (a decoder's error is a bad image, a file's a bad model).
template <class F>
auto classify_errors(ErrorKind kind, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::general) throw;
    throw e.as(kind);
  }
}

// Text taken from an untrusted file (a chunk type, a decoder's reason quoting the file's bytes) as
// it may appear in a message: bytes outside printable ASCII become '?'.
inline std::string printable_ascii(std::string s) {
  for (char& c : s)
    if (c < 0x20 || c > 0x7e) c = '?';
  return s;
}

}  // namespace ckjit
