#include "runtime/structured/gbnf.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/error.h"

namespace ckjit::structured {
namespace {

using Frag = Nfa::Frag;
constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr int kMaxRepeat = 1024;   // {m,n} bounds above this are refused
constexpr int kMaxNesting = 128;   // groups and rule expansions (hostile grammars end in an Error)

// The grammar as parsed.
struct Node {
  enum Kind { alt, seq, literal, cls, any, ref, repeat } kind;
  explicit Node(Kind k) : kind(k) {}
  std::vector<Node> kids;                          // alt: options; seq: items; repeat: the one element
  std::string bytes;                               // literal (UTF-8)
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // cls: code point ranges (negation already applied)
  std::string name;                                // ref
  int lo = 0, hi = -1;                             // repeat bounds (hi < 0: no bound)
  size_t at = 0;                                   // where it was written (for messages)
};

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) out.push_back(char(cp));
  else if (cp < 0x800) out.push_back(char(0xC0 | cp >> 6)), out.push_back(char(0x80 | (cp & 0x3F)));
  else if (cp < 0x10000)
    out.push_back(char(0xE0 | cp >> 12)), out.push_back(char(0x80 | (cp >> 6 & 0x3F))), out.push_back(char(0x80 | (cp & 0x3F)));
  else
    out.push_back(char(0xF0 | cp >> 18)), out.push_back(char(0x80 | (cp >> 12 & 0x3F))), out.push_back(char(0x80 | (cp >> 6 & 0x3F))),
        out.push_back(char(0x80 | (cp & 0x3F)));
}

class Parser {
 public:
  explicit Parser(std::string_view t) : t_(t) {}

  std::map<std::string, Node> parse() {
    std::map<std::string, Node> rules;
    space();
    while (i_ < t_.size()) {
      const size_t start = i_;
      const std::string name = identifier();
      if (name.empty()) fail("a rule name");
      space();
      if (t_.substr(i_, 3) != "::=") fail("'::=' after the rule name '" + name + "'");
      i_ += 3;
      if (rules.count(name)) fail_at(start, "the rule '" + name + "' is defined twice");
      rules.emplace(name, alternatives(0));
      space();
    }
    return rules;
  }

  [[noreturn]] void fail_at(size_t at, const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t k = 0; k < at && k < t_.size(); ++k) {
      if (t_[k] == '\n') ++line, col = 1;
      else ++col;
    }
    throw Error("grammar line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what, ErrorKind::invalid_argument);
  }

 private:
  [[noreturn]] void fail(const std::string& expected) const { fail_at(i_, "expected " + expected); }

  // Spaces, newlines and # comments.
  void space() {
    while (i_ < t_.size()) {
      if (t_[i_] == '#') {
        while (i_ < t_.size() && t_[i_] != '\n') ++i_;
      } else if (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r') {
        ++i_;
      } else {
        break;
      }
    }
  }

  static bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

  std::string identifier() {
    const size_t s = i_;
    while (i_ < t_.size() && name_char(t_[i_])) ++i_;
    return std::string(t_.substr(s, i_ - s));
  }

  // Whether a new rule starts here (name then ::=), which ends the sequence before it.
  bool rule_starts() const {
    size_t k = i_;
    while (k < t_.size() && name_char(t_[k])) ++k;
    if (k == i_) return false;
    while (k < t_.size() && (t_[k] == ' ' || t_[k] == '\t')) ++k;
    return t_.substr(k, 3) == "::=";
  }

  Node alternatives(int depth) {
    if (depth > kMaxNesting) fail_at(i_, "groups nested deeper than " + std::to_string(kMaxNesting));
    Node n{Node::alt};
    n.at = i_;
    n.kids.push_back(sequence(depth));
    space();
    while (i_ < t_.size() && t_[i_] == '|') {
      ++i_;
      n.kids.push_back(sequence(depth));
      space();
    }
    return n;
  }

  Node sequence(int depth) {
    Node n{Node::seq};
    n.at = i_;
    for (;;) {
      space();
      if (i_ >= t_.size() || t_[i_] == '|' || t_[i_] == ')' || rule_starts()) break;
      Node item = element(depth);
      space();
      int postfix = 0;  // each wraps the element once more: bounded like nesting (the tree is freed recursively)
      while (i_ < t_.size() && (t_[i_] == '*' || t_[i_] == '+' || t_[i_] == '?' || t_[i_] == '{')) {
        if (++postfix > kMaxNesting) fail_at(i_, "more than " + std::to_string(kMaxNesting) + " repetition operators on one element");
        Node r{Node::repeat};
        r.at = i_;
        if (t_[i_] == '*') r.lo = 0, r.hi = -1, ++i_;
        else if (t_[i_] == '+') r.lo = 1, r.hi = -1, ++i_;
        else if (t_[i_] == '?') r.lo = 0, r.hi = 1, ++i_;
        else bounds(r);
        r.kids.push_back(std::move(item));
        item = std::move(r);
        space();
      }
      n.kids.push_back(std::move(item));
    }
    return n;
  }

  int count() {
    space();
    const size_t s = i_;
    int64_t v = 0;
    while (i_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_])) && v <= kMaxRepeat) v = v * 10 + (t_[i_++] - '0');
    if (i_ == s) fail("a count");
    if (v > kMaxRepeat) fail_at(s, "a repetition count above " + std::to_string(kMaxRepeat));
    return int(v);
  }

  void bounds(Node& r) {
    ++i_;  // '{'
    r.lo = count();
    space();
    r.hi = r.lo;
    if (i_ < t_.size() && t_[i_] == ',') {
      ++i_;
      space();
      r.hi = i_ < t_.size() && t_[i_] == '}' ? -1 : count();
      space();
    }
    if (i_ >= t_.size() || t_[i_] != '}') fail("'}' closing the repetition");
    ++i_;
    if (r.hi >= 0 && r.hi < r.lo) fail_at(r.at, "a repetition {m,n} with n below m");
  }

  Node element(int depth) {
    const size_t s = i_;
    const char c = t_[i_];
    if (c == '"') return literal();
    if (c == '[') return char_class();
    if (c == '.') {
      ++i_;
      Node n{Node::any};
      n.at = s;
      return n;
    }
    if (c == '(') {
      ++i_;
      Node g = alternatives(depth + 1);
      space();
      if (i_ >= t_.size() || t_[i_] != ')') fail("')'");
      ++i_;
      return g;
    }
    const std::string name = identifier();
    if (name.empty()) fail_at(s, std::string("unexpected '") + c + "'");
    Node n{Node::ref};
    n.name = name;
    n.at = s;
    return n;
  }

  // One character of a literal or class, escapes decoded, as a code point.
  uint32_t character() {
    if (i_ >= t_.size()) fail("a character");
    const auto u = static_cast<unsigned char>(t_[i_]);
    if (u == '\\') {
      if (++i_ >= t_.size()) fail("an escape");
      const char e = t_[i_++];
      switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '\\': case '"': case '[': case ']': case '-': case '^': return uint32_t(e);
        case 'x': return hex(2);
        case 'u': return hex(4);
        case 'U': return hex(8);
        default: fail_at(i_ - 2, std::string("unknown escape '\\") + e + "'");
      }
    }
    // A UTF-8 sequence as one code point.
    const int len = u < 0x80 ? 1 : (u >> 5) == 6 ? 2 : (u >> 4) == 14 ? 3 : (u >> 3) == 30 ? 4 : 0;
    if (len == 0 || i_ + size_t(len) > t_.size()) fail_at(i_, "invalid UTF-8");
    uint32_t cp = len == 1 ? u : len == 2 ? (u & 0x1F) : len == 3 ? (u & 0x0F) : (u & 0x07);
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(t_[i_ + size_t(k)]);
      if ((b & 0xC0) != 0x80) fail_at(i_, "invalid UTF-8");
      cp = cp << 6 | (b & 0x3F);
    }
    const uint32_t min = len == 1 ? 0 : len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    if (cp < min || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) fail_at(i_, "invalid UTF-8 (not a Unicode scalar value)");
    i_ += size_t(len);
    return cp;
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      if (i_ >= t_.size() || !std::isxdigit(static_cast<unsigned char>(t_[i_]))) fail(std::to_string(digits) + " hex digits");
      const char c = t_[i_++];
      v = v * 16 + uint32_t(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10));
    }
    if (v > kMaxCodePoint || (v >= 0xD800 && v <= 0xDFFF)) fail_at(i_ - size_t(digits), "a code point outside Unicode's scalar values");
    return v;
  }

  Node literal() {
    Node n{Node::literal};
    n.at = i_++;
    while (i_ < t_.size() && t_[i_] != '"') append_utf8(n.bytes, character());
    if (i_ >= t_.size()) fail_at(n.at, "an unterminated \"literal\"");
    ++i_;
    return n;
  }

  Node char_class() {
    Node n{Node::cls};
    n.at = i_++;
    const bool negated = i_ < t_.size() && t_[i_] == '^';
    if (negated) ++i_;
    std::vector<std::pair<uint32_t, uint32_t>> rs;
    while (i_ < t_.size() && t_[i_] != ']') {
      const uint32_t lo = character();
      uint32_t hi = lo;
      if (i_ + 1 < t_.size() && t_[i_] == '-' && t_[i_ + 1] != ']') {
        ++i_;
        hi = character();
        if (hi < lo) fail_at(n.at, "a class range whose end comes before its start");
      }
      rs.emplace_back(lo, hi);
    }
    if (i_ >= t_.size()) fail_at(n.at, "an unterminated [class]");
    ++i_;
    std::sort(rs.begin(), rs.end());
    std::vector<std::pair<uint32_t, uint32_t>> merged;
    for (const auto& r : rs)
      if (!merged.empty() && r.first <= merged.back().second + 1) merged.back().second = std::max(merged.back().second, r.second);
      else merged.push_back(r);
    if (!negated) {
      n.ranges = merged;
    } else {
      uint32_t next = 0;
      for (const auto& [lo, hi] : merged) {
        if (lo > next) n.ranges.emplace_back(next, lo - 1);
        next = hi + 1;
      }
      if (next <= kMaxCodePoint) n.ranges.emplace_back(next, kMaxCodePoint);
    }
    if (n.ranges.empty()) fail_at(n.at, "a class that matches no character");
    return n;
  }

  std::string_view t_;
  size_t i_ = 0;
};

class Builder {
 public:
  Builder(Nfa& nfa, const std::map<std::string, Node>& rules, const Parser& p) : n_(nfa), rules_(rules), p_(p) {}

  Frag build(const Node& node, int depth) {
    if (depth > kMaxNesting) p_.fail_at(node.at, "rules expand deeper than " + std::to_string(kMaxNesting) + " levels");
    switch (node.kind) {
      case Node::alt: {
        if (node.kids.size() == 1) return build(node.kids[0], depth + 1);
        std::vector<Frag> options;
        for (const Node& k : node.kids) options.push_back(build(k, depth + 1));
        return n_.alt(options);
      }
      case Node::seq: {
        Frag f = n_.empty();
        for (const Node& k : node.kids) f = n_.seq(f, build(k, depth + 1));
        return f;
      }
      case Node::literal: return n_.bytes(node.bytes);
      case Node::cls: return code_points(node.ranges);
      case Node::any: return code_points({{0, kMaxCodePoint}});
      case Node::repeat: return n_.repeat([&] { return build(node.kids[0], depth + 1); }, node.lo, node.hi);
      case Node::ref: {
        auto it = rules_.find(node.name);
        if (it == rules_.end()) p_.fail_at(node.at, "the rule '" + node.name + "' is not defined");
        if (std::find(active_.begin(), active_.end(), node.name) != active_.end())
          p_.fail_at(node.at, "the rule '" + node.name + "' refers back to itself: recursive grammars are not supported (the grammar must be regular)");
        active_.push_back(node.name);
        Frag f = build(it->second, depth + 1);
        active_.pop_back();
        return f;
      }
    }
    return n_.empty();
  }

 private:
  // Code point ranges as UTF-8 byte sequences (surrogates left out): each range split until all its
  // code points share an encoded length and every byte position is one byte range.
  Frag code_points(const std::vector<std::pair<uint32_t, uint32_t>>& ranges) {
    std::vector<Frag> options;
    for (auto [lo, hi] : ranges) {
      auto add = [&](uint32_t a, uint32_t b) {
        if (a <= b) split(a, b, options);
      };
      // Surrogates are not characters.
      if (lo <= 0xDFFF && hi >= 0xD800) add(lo, std::min(hi, 0xD7FFu)), add(std::max(lo, 0xE000u), hi);
      else add(lo, hi);
    }
    return n_.alt(options);
  }

  static int utf8_len(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

  void split(uint32_t lo, uint32_t hi, std::vector<Frag>& out) {
    for (uint32_t limit : {0x7Fu, 0x7FFu, 0xFFFFu})
      if (lo <= limit && hi > limit) {
        split(lo, limit, out);
        split(limit + 1, hi, out);
        return;
      }
    const int len = utf8_len(lo);
    for (int i = 1; i < len; ++i) {
      const uint32_t m = (1u << (6 * i)) - 1;
      if ((lo & ~m) != (hi & ~m)) {
        if ((lo & m) != 0) {
          split(lo, lo | m, out);
          split((lo | m) + 1, hi, out);
          return;
        }
        if ((hi & m) != m) {
          split(lo, (hi & ~m) - 1, out);
          split(hi & ~m, hi, out);
          return;
        }
      }
    }
    std::string a, b;
    append_utf8(a, lo), append_utf8(b, hi);
    Frag f = n_.empty();
    for (size_t k = 0; k < a.size(); ++k) f = n_.seq(f, n_.ranges({{uint8_t(a[k]), uint8_t(b[k])}}));
    out.push_back(f);
  }

  Nfa& n_;
  const std::map<std::string, Node>& rules_;
  const Parser& p_;
  std::vector<std::string> active_;
};

}  // namespace

Dfa compile_gbnf(std::string_view grammar) {
  Parser p(grammar);
  const std::map<std::string, Node> rules = p.parse();
  if (!rules.count("root")) throw Error("grammar: no 'root' rule (generation starts there)", ErrorKind::invalid_argument);
  Nfa nfa;
  Builder b(nfa, rules, p);
  Node root{Node::ref};
  root.name = "root";
  const Frag whole = b.build(root, 0);
  return Dfa::from_nfa(nfa, whole, kMaxDfaStates);
}

}  // namespace ckjit::structured
