#include "runtime/image/jpeg_check.h"

#include <algorithm>
#include <utility>

#include "runtime/error.h"

namespace ckjit::image {

namespace {

// Reads the bytes the way stb_image's memory context does: past the end every byte is 0 and a skip
// may move beyond the end.
struct StbReader {
  std::span<const uint8_t> b;
  size_t pos = 0;
  bool at_eof() const { return pos >= b.size(); }
  int get8() { return pos < b.size() ? b[pos++] : 0; }
  int get16() { const int hi = get8(); return hi << 8 | get8(); }
  void skip(size_t n) { pos += n; }
};

constexpr int kNoMarker = 0xff;  // stb's STBI__MARKER_none

bool is_sof(int m) { return m == 0xc0 || m == 0xc1 || m == 0xc2; }
bool is_rst(int m) { return m >= 0xd0 && m <= 0xd7; }

// The walk follows stb_image 2.27's marker handling (stbi__decode_jpeg_image and the functions it
// calls) on every path where stb goes on; where stb would give up, the walk stops too (stb then
// reports the corruption itself). Each function returns false where stb returns an error.
class StbJpegWalk {
 public:
  StbJpegWalk(std::span<const uint8_t> bytes, const std::string& name) : r_{bytes}, name_(name) {}

  void run() {
    if (marker() != 0xd8) return;  // no SOI
    // Header: markers before the frame; stb skips stray bytes between them here.
    int m = marker();
    while (!is_sof(m)) {
      if (!segment(m)) return;
      m = marker();
      while (m == kNoMarker) {
        if (r_.at_eof()) return;
        m = marker();
      }
    }
    progressive_ = m == 0xc2;
    if (!frame_header()) return;
    // Image: scans and the tables between them, until EOI.
    for (m = marker(); m != 0xd9; m = marker()) {
      if (m == 0xda) {
        if (!scan_header()) return;
        skip_entropy_coded_data();
      } else if (m == 0xdc) {  // DNL: length 4 and a height
        if (r_.get16() != 4) return;
        r_.get16();
      } else if (!segment(m)) {
        return;
      }
    }
  }

 private:
  int marker() {
    if (pending_ != kNoMarker) return std::exchange(pending_, kNoMarker);
    int x = r_.get8();
    if (x != 0xff) return kNoMarker;
    while (x == 0xff) x = r_.get8();
    return x;
  }

  // stbi__process_frame_header: the component ids, which the scans name.
  bool frame_header() {
    const int len = r_.get16();
    r_.skip(5);  // precision, height, width
    n_comp_ = r_.get8();
    if (n_comp_ != 1 && n_comp_ != 3 && n_comp_ != 4) return false;
    if (len != 8 + 3 * n_comp_) return false;
    for (int i = 0; i < n_comp_; ++i) {
      comp_id_[i] = r_.get8();
      r_.skip(2);  // sampling factors, quantisation table
    }
    return true;
  }

  // stbi__process_scan_header, and the tables the scan's decoding then reads: stb does not check
  // that a DHT defined them, and reads an undefined table's uninitialised memory as indices
  // (fuzzer, session 7).
  bool scan_header() {
    const int len = r_.get16(), n = r_.get8();
    if (n < 1 || n > 4 || n > n_comp_ || len != 6 + 2 * n) return false;
    int dc[4], ac[4];
    for (int i = 0; i < n; ++i) {
      const int id = r_.get8(), q = r_.get8();
      if (std::find(comp_id_, comp_id_ + n_comp_, id) == comp_id_ + n_comp_) return false;
      dc[i] = q >> 4, ac[i] = q & 15;
      if (dc[i] > 3 || ac[i] > 3) return false;
    }
    const int ss = r_.get8(), se = r_.get8(), ah = r_.get8() >> 4;
    // Baseline scans decode DC and AC; progressive ones the DC (first pass) or the AC band.
    const bool uses_dc = !progressive_ || (ss == 0 && se == 0 && ah == 0), uses_ac = !progressive_ || ss > 0;
    for (int i = 0; i < n; ++i) {
      if (uses_dc && !dc_defined_[dc[i]]) undefined_table("DC", dc[i]);
      if (uses_ac && !ac_defined_[ac[i]]) undefined_table("AC", ac[i]);
    }
    return true;
  }

  [[noreturn]] void undefined_table(const char* kind, int id) {
    throw Error(name_ + ": corrupt JPEG: a scan uses Huffman table " + kind + std::to_string(id) +
                ", which no DHT before it defines");
  }

  bool sized_segment() {
    const int len = r_.get16();
    if (len < 2) return false;
    r_.skip(size_t(len - 2));
    return true;
  }

  // stb's decoder stops at the first 0xff followed (after fill bytes) by anything but a stuffed 0
  // (it passes restart markers when a restart interval is set; passing them always is the cautious
  // reading). If it finished its blocks earlier, stb takes the byte after the next 0xff as the marker,
  // which only errs where this walk goes on: the walk then checks tables stb never reaches.
  void skip_entropy_coded_data() {
    while (!r_.at_eof()) {
      if (r_.get8() != 0xff) continue;
      int c = r_.get8();
      while (c == 0xff) c = r_.get8();
      if (c != 0 && !is_rst(c)) {
        pending_ = c;
        return;
      }
    }
  }

  // stbi__process_marker: restart interval, quantisation and Huffman tables, APPn and COM.
  bool segment(int m) {
    switch (m) {
      case kNoMarker: return false;
      case 0xdd:  // DRI
        if (r_.get16() != 4) return false;
        r_.get16();
        return true;
      case 0xdb: {  // DQT
        int len = r_.get16() - 2;
        while (len > 0) {
          const int q = r_.get8(), p = q >> 4, t = q & 15;
          if (p > 1 || t > 3) return false;
          r_.skip(p ? 128 : 64);
          len -= p ? 129 : 65;
        }
        return len == 0;
      }
      case 0xc4: {  // DHT: stb fills a 257-entry size table from the 16 counts before any check
        int len = r_.get16() - 2;
        while (len > 0) {
          const int q = r_.get8(), tc = q >> 4, th = q & 15;
          if (tc > 1 || th > 3) return false;
          int codes = 0;
          for (int k = 0; k < 16; ++k) codes += r_.get8();
          if (codes > 256)
            throw Error(name_ + ": corrupt JPEG: a Huffman table lists " + std::to_string(codes) + " codes (at most 256)");
          r_.skip(size_t(codes));
          len -= 17 + codes;
          (tc ? ac_defined_ : dc_defined_)[th] = true;
        }
        return len == 0;
      }
      default: break;
    }
    if ((m >= 0xe0 && m <= 0xef) || m == 0xfe) {  // APPn, COM: stb consumes exactly the length
      return sized_segment();
    }
    return false;  // stb: unknown marker
  }

  StbReader r_;
  const std::string& name_;
  int pending_ = kNoMarker;
  bool progressive_ = false;
  int n_comp_ = 0, comp_id_[4] = {};
  bool dc_defined_[4] = {}, ac_defined_[4] = {};
};

}  // namespace

void check_jpeg_huffman_tables(std::span<const uint8_t> bytes, const std::string& name) {
  StbJpegWalk(bytes, name).run();
}

}  // namespace ckjit::image
