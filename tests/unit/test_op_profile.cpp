// The op profile (ckjit run --profile): per phase and op kind sums, per-layer sums, the machine
// line perf/compare parses, and that attaching it changes no output.
#include <doctest/doctest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>

#include "runtime/op_profile.h"

using ckjit::OpProfile;
using ckjit::OpTimer;
using ckjit::OpWork;
using ckjit::Phase;

namespace {
std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}
}  // namespace

TEST_SUITE("profile") {

TEST_CASE("op profile: sums per phase / op and layer and one machine line per phase") {
  OpProfile p;
  p.set_phase(Phase::image_prefill);
  p.add_rows(Phase::image_prefill, 9);
  p.add("qkv", 0, 2.0, {100, 10});
  p.add("qkv", 1, 3.0, {100, 10});
  std::string name = "attention";  // op names are compared by content, not by address
  p.add(name.c_str(), 1, 1.0);
  p.set_phase(Phase::decode);
  p.add("qkv", 0, 0.5, {1, 10});
  const auto img = p.totals(Phase::image_prefill);
  CHECK(img.total.ms == doctest::Approx(6.0));
  CHECK(img.total.macs == doctest::Approx(200));
  CHECK(img.total.bytes == doctest::Approx(20));
  CHECK(img.total.calls == 3);
  CHECK(img.rows == 9);
  CHECK(p.totals(Phase::decode).total.calls == 1);
  CHECK(p.totals(Phase::encode).total.calls == 0);
  const std::string r = joined(p.report());
  INFO(r);
  CHECK(r.find("profile: image_prefill: 6.0 ms in 3 op calls, 9 rows") != std::string::npos);
  CHECK(r.find("per layer (ms): 0:2.0 1:4.0") != std::string::npos);
  CHECK(r.find("profile-phase: image_prefill ms=6.000 rows=9 macs=200 weight_bytes=20 qkv=5.000:200:20 attention=1.000:0:0") !=
        std::string::npos);
  CHECK(r.find("profile-phase: decode ms=0.500 rows=0") != std::string::npos);
  CHECK(r.find("encode") == std::string::npos);  // phases without ops are left out
}

TEST_CASE("op timer: records the time of its scope / nothing without a profile") {
  OpProfile p;
  p.set_phase(Phase::encode);
  {
    OpTimer t(&p, "gelu", 3, OpWork{5, 0} + OpWork{1, 2});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  { OpTimer none(nullptr, "gelu"); }
  const auto t = p.totals(Phase::encode);
  CHECK(t.total.calls == 1);
  CHECK(t.total.ms >= 19.0);
  CHECK(t.total.macs == doctest::Approx(6));
  CHECK(t.total.bytes == doctest::Approx(2));
}

}  // TEST_SUITE
