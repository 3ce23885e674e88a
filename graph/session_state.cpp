#include "graph/session_state.h"

#include <algorithm>
#include <cstring>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "runtime/error.h"

namespace ckjit::graph {

namespace {

constexpr char kMagic[8] = {'C', 'K', 'J', 'I', 'T', 'K', 'V', '1'};
constexpr uint32_t kVersion = 1;

// 64-bit FNV-1a over 8-byte words (bytes past a multiple of 8 one by one).
struct Hash {
  uint64_t h = 1469598103934665603ull;
  void add(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, b + i, 8);
      h = (h ^ w) * 1099511628211ull;
    }
    for (; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  }
};

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t layout, panel, tiled;
  uint64_t fingerprint;
  int64_t n_layer, n_head_kv, head_dim, n_rows;
};

void write(std::ostream& out, const void* p, size_t n, Hash* h = nullptr) {
  out.write(static_cast<const char*>(p), std::streamsize(n));
  if (!out) throw Error("state: writing failed (disk full?)", ErrorKind::io);
  if (h) h->add(p, n);
}

void read(std::istream& in, void* p, size_t n, Hash* h = nullptr) {
  in.read(static_cast<char*>(p), std::streamsize(n));
  if (size_t(in.gcount()) != n) throw Error("state: the file ends early (cut off?)", ErrorKind::invalid_argument);
  if (h) h->add(p, n);
}

Header header_of(const Session& s, int64_t n) {
  const Hparams& hp = s.model().hparams();
  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.version = kVersion;
  h.layout = uint32_t(s.kv().layout());
  h.panel = uint32_t(s.kv().panel());
  h.tiled = s.options().attention == AttentionOrder::tiled ? 1 : 0;
  h.fingerprint = model_fingerprint(s.model());
  h.n_layer = hp.n_layer, h.n_head_kv = hp.n_head_kv, h.head_dim = hp.head_dim, h.n_rows = n;
  return h;
}

}  // namespace

uint64_t model_fingerprint(const TextModel& model) {
  const Hparams& hp = model.hparams();
  Hash h;
  for (int64_t v : {hp.n_embd, hp.n_layer, hp.n_ff, hp.n_head, hp.n_head_kv, hp.head_dim, hp.n_vocab}) h.add(&v, sizeof v);
  const gguf::TensorInfo& e = model.token_embd();
  const size_t sample = size_t(std::min<uint64_t>(e.n_bytes, 4096));
  h.add(&e.n_bytes, sizeof e.n_bytes);
  h.add(e.data, sample);
  h.add(e.data + (e.n_bytes - sample), sample);
  return h.h;
}

void save_session_state(const Session& s, std::ostream& out) {
  const int64_t n = s.n_past();
  const Header hd = header_of(s, n);
  write(out, &hd, sizeof hd);
  Hash h;
  write(out, s.positions_after().data(), size_t(n) * sizeof(int64_t), &h);
  s.kv().for_each_run(n, [&](const uint16_t* p, size_t c) { write(out, p, c * sizeof(uint16_t), &h); });
  write(out, &h.h, sizeof h.h);
}

void load_session_state(Session& s, std::istream& in) {
  Header got{};
  read(in, &got, sizeof got);
  if (std::memcmp(got.magic, kMagic, 8) != 0) throw Error("state: not a ckjit session state file", ErrorKind::invalid_argument);
  if (got.version != kVersion)
    throw Error("state: version " + std::to_string(got.version) + ", this ckjit reads " + std::to_string(kVersion), ErrorKind::invalid_argument);
  const Header want = header_of(s, got.n_rows);
  if (got.fingerprint != want.fingerprint) throw Error("state: it was saved with another model", ErrorKind::invalid_argument);
  if (got.n_layer != want.n_layer || got.n_head_kv != want.n_head_kv || got.head_dim != want.head_dim || got.layout != want.layout ||
      got.panel != want.panel || got.tiled != want.tiled)
    throw Error("state: saved with another KV layout (attention order or ISA panel width)", ErrorKind::invalid_argument);
  if (got.n_rows < 0 || got.n_rows > s.n_ctx())
    throw Error("state: " + std::to_string(got.n_rows) + " rows saved; this session's context is " + std::to_string(s.n_ctx()),
                ErrorKind::invalid_argument);
  const int64_t n = got.n_rows;
  std::vector<int64_t> pos(static_cast<size_t>(n));
  Hash h;
  read(in, pos.data(), pos.size() * sizeof(int64_t), &h);
  for (int64_t i = 0; i < n; ++i)
    if (pos[size_t(i)] < 1 || pos[size_t(i)] > (int64_t(1) << 30) || (i > 0 && pos[size_t(i)] < pos[size_t(i - 1)]))
      throw Error("state: the saved positions are not valid", ErrorKind::invalid_argument);
  try {
    s.restore(n, pos, [&](KvCache& kv) { kv.for_each_run(n, [&](uint16_t* p, size_t c) { read(in, p, c * sizeof(uint16_t), &h); }); });
    uint64_t sum = 0;
    read(in, &sum, sizeof sum);
    if (sum != h.h) throw Error("state: the checksum differs (the file was altered)", ErrorKind::invalid_argument);
  } catch (...) {
    s.truncate(0);
    throw;
  }
}

}  // namespace ckjit::graph
