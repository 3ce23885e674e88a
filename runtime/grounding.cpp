#include "runtime/grounding.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace ckjit::grounding {
namespace {

void skip_space(std::string_view t, size_t& i) {
  while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i]))) ++i;
}

bool number(std::string_view t, size_t& i, double& v) {
  skip_space(t, i);
  const std::string s(t.substr(i, 32));
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  if (end == s.c_str()) return false;
  i += size_t(end - s.c_str());
  return true;
}

bool expect(std::string_view t, size_t& i, char c) {
  skip_space(t, i);
  if (i >= t.size() || t[i] != c) return false;
  ++i;
  return true;
}

// A JSON string value of key in the object around `at` (searched from the '{' before it to the
// matching end of that object, without nesting): "" when absent.
std::string label_near(std::string_view t, size_t at) {
  const size_t open = t.rfind('{', at), close = t.find('}', at);
  if (open == std::string_view::npos) return "";
  const std::string_view obj = t.substr(open, close == std::string_view::npos ? std::string_view::npos : close - open);
  const size_t k = obj.find("\"label\"");
  if (k == std::string_view::npos) return "";
  size_t i = k + 7;
  if (!expect(obj, i, ':') || !expect(obj, i, '"')) return "";
  std::string out;
  for (; i < obj.size() && obj[i] != '"'; ++i) {
    if (obj[i] == '\\' && i + 1 < obj.size()) ++i;
    out.push_back(obj[i]);
  }
  return out;
}

Box scaled(const std::array<double, 4>& g, int w, int h, std::string label) {
  Box b{g, {}, std::move(label)};
  const double scale[4] = {double(w), double(h), double(w), double(h)};
  for (int k = 0; k < 4; ++k) b.px[size_t(k)] = std::clamp(g[size_t(k)], 0.0, 1000.0) * scale[k] / 1000.0;
  return b;
}

}  // namespace

std::vector<Box> find_boxes(std::string_view text, int width, int height) {
  std::vector<Box> out;
  // "bbox_2d": [x1, y1, x2, y2]
  for (size_t at = text.find("\"bbox_2d\""); at != std::string_view::npos; at = text.find("\"bbox_2d\"", at + 1)) {
    size_t i = at + 9;
    std::array<double, 4> g{};
    bool ok = expect(text, i, ':') && expect(text, i, '[');
    for (int k = 0; ok && k < 4; ++k) ok = number(text, i, g[size_t(k)]) && (k == 3 || expect(text, i, ','));
    if (ok && expect(text, i, ']')) out.push_back(scaled(g, width, height, label_near(text, at)));
  }
  // <|box_start|>(x1,y1),(x2,y2)<|box_end|>, labelled by a <|object_ref_start|>...<|object_ref_end|> before it.
  const std::string_view bs = "<|box_start|>", ref_s = "<|object_ref_start|>", ref_e = "<|object_ref_end|>";
  for (size_t at = text.find(bs); at != std::string_view::npos; at = text.find(bs, at + 1)) {
    size_t i = at + bs.size();
    std::array<double, 4> g{};
    const bool ok = expect(text, i, '(') && number(text, i, g[0]) && expect(text, i, ',') && number(text, i, g[1]) && expect(text, i, ')') &&
                    expect(text, i, ',') && expect(text, i, '(') && number(text, i, g[2]) && expect(text, i, ',') &&
                    number(text, i, g[3]) && expect(text, i, ')');
    if (!ok) continue;
    // The label: an object reference that ends right before the box.
    std::string label;
    const size_t e = text.rfind(ref_e, at);
    size_t after = e == std::string_view::npos ? e : e + ref_e.size();
    if (after != std::string_view::npos) skip_space(text, after);
    const size_t s = after == at ? text.rfind(ref_s, e) : std::string_view::npos;
    if (s != std::string_view::npos) label = std::string(text.substr(s + ref_s.size(), e - s - ref_s.size()));
    out.push_back(scaled(g, width, height, label));
  }
  return out;
}

}  // namespace ckjit::grounding
