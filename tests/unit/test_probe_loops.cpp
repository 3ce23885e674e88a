// The machine-ceiling loops: the read loop covers exactly the bytes asked for (sum of every word,
// a guard page after the buffer), stream counts split the range without gaps or overlap, and bad
// arguments are refused; the dot loops report the MACs they ran.
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "jit/planner/probe_loops.h"
#include "runtime/error.h"
#include "tests/unit/skip.h"
#include "topology/isa.h"

using namespace ckjit;
using namespace ckjit::planner;

namespace {

// The read loop (ymm or zmm) over a buffer that ends where a guard page starts, for every stream
// count; for ymm also the arguments it refuses.
void check_read_loop(bool avx512) {
  const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  const std::size_t bytes = 512 * 4 * 6 * 5;  // a multiple of 512 x every stream count 1..6
  const std::size_t mapped = (bytes + page - 1) / page * page + page;
  auto* base = static_cast<uint8_t*>(mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(base != MAP_FAILED);
  // The buffer ends where the guard page starts: reading one byte too far faults.
  uint8_t* buf = base + (mapped - page - bytes);
  REQUIRE(mprotect(base + mapped - page, page, PROT_NONE) == 0);
  uint32_t expect = 0;
  for (std::size_t i = 0; i < bytes / 4; ++i) {
    uint32_t w = uint32_t(i * 2654435761u + 7);
    std::memcpy(buf + 4 * i, &w, 4);
    expect += w;
  }
  for (int streams = 1; streams <= 6; ++streams) {
    CAPTURE(avx512);
    CAPTURE(streams);
    ReadLoop loop(streams, avx512);
    CHECK(loop.run(buf, bytes) == expect);
    CHECK(loop.run(buf, 0) == 0);
  }
  if (!avx512) {
    CHECK_THROWS_AS(ReadLoop(2, false).run(buf, 512), Error);
    CHECK_THROWS_AS(ReadLoop(0, false), Error);
    CHECK_THROWS_AS(ReadLoop(7, false), Error);
  }
  munmap(base, mapped);
}

}  // namespace

TEST_SUITE("planner") {
TEST_CASE("read loop sums every word of the range for each stream count (ymm)") {
  check_read_loop(false);
}

TEST_CASE("read loop sums every word of the range for each stream count (zmm)") {
  if (!topo::detect_isa().avx512f) CKJIT_SKIP("AVX-512F not available: no zmm read loop");
  check_read_loop(true);
}

TEST_CASE("dot loops run the AVX2 and FMA instruction mixes and count their MACs") {
  const topo::Isa isa = topo::detect_isa();
  REQUIRE_MESSAGE(isa.avx2, "ckjit needs AVX2");
  CHECK(DotLoop(DotProbe::avx2_int8, 4).run(10) == doctest::Approx(10 * 4 * 4 * 32));
  if (isa.fma) CHECK(DotLoop(DotProbe::fma_ymm, 8).run(3) == doctest::Approx(3 * 4 * 8 * 8));
  CHECK(DotLoop(DotProbe::avx2_int8, 4).run(0) == 0);
  CHECK_THROWS_AS(DotLoop(DotProbe::avx2_int8, 7), Error);
  CHECK_THROWS_AS(DotLoop(DotProbe::vnni_zmm, 0), Error);
  CHECK_THROWS_AS(DotLoop(DotProbe::vnni_ymm, 15), Error);
}

TEST_CASE("dot loop of AVX-512 VNNI (zmm vpdpbusd) counts its MACs") {
  if (!topo::detect_isa().avx512vnni) CKJIT_SKIP("AVX512-VNNI not available");
  CHECK(DotLoop(DotProbe::vnni_zmm, 12).run(5) == doctest::Approx(5 * 4 * 12 * 64));
}

TEST_CASE("dot loop of AVX-512 BF16 (zmm vdpbf16ps) counts its MACs") {
  if (!topo::detect_isa().avx512bf16) CKJIT_SKIP("AVX512-BF16 not available");
  CHECK(DotLoop(DotProbe::bf16_zmm, 12).run(5) == doctest::Approx(5 * 4 * 12 * 32));
}

TEST_CASE("dot loop of AVX-VNNI (ymm vpdpbusd) counts its MACs") {
  if (!topo::detect_isa().avx_vnni) CKJIT_SKIP("AVX-VNNI not available");
  CHECK(DotLoop(DotProbe::vnni_ymm, 8).run(5) == doctest::Approx(5 * 4 * 8 * 32));
}
}
