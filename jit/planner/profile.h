#pragma once
// Tuning profiles: what `ckjit tune` measured on one machine, keyed by the machine's identity and
// by op shape, stored as JSON in $XDG_CACHE_HOME/ckjit (or ~/.cache/ckjit). Each entry records the
// best tiling, the runner that measured it, and every rejected candidate with its time and ratio.
// Loading never throws: a missing, corrupt, stale or foreign file gives nullopt plus a warning.
#include <optional>
#include <string>
#include <vector>

#include "runtime/op_shape.h"
#include "topology/machine.h"

namespace ckjit {

// The fields that make measurements transferable: same CPU, same ISA as capped, same core count
// and caches, same CPU budget (a different quota or cpuset changes what the best choice is).
struct MachineIdentity {
  std::string vendor, model_name, uarch;
  int family = 0, model = 0, stepping = 0;
  std::string isa;      // Isa::to_string() after CKJIT_MAX_ISA
  int physical_cores = 0, logical_cpus = 0, usable_cpus = 0;
  std::string caches;   // "L1d 32768 L2 1048576 L3 33554432"

  static MachineIdentity of(const topo::Machine& m);
  std::string key() const;  // 16 hex digits, hash of every field (the profile's file name)
  // Human-readable list of fields that differ from `other` (empty when equal).
  std::vector<std::string> differences(const MachineIdentity& other) const;
  bool operator==(const MachineIdentity&) const = default;
};

struct Measurement {
  Tiling tiling;
  double median_us = 0;
  std::vector<double> runs_us;  // every timed run
  double model_us = 0;          // what the cost model expected
};

struct RejectedCandidate {
  Measurement measured;
  double ratio = 0;             // median_us / best median_us (>= 1 unless the best was noisy)
};

struct ProfileEntry {
  OpShape shape;
  std::string runner;           // what executed the op ("reference-int8 ...", later the JIT kernel)
  Measurement best;
  std::vector<RejectedCandidate> rejected;
};

// Rates `ckjit tune` measured on this machine (0 = not measured), for the planner's cost model.
struct MeasuredPeaks {
  double int8_gmacs_per_core = 0, bf16_gmacs_per_core = 0, f32_gmacs_per_core = 0;
  double dram_gbps = 0, dram_gbps_per_core = 0;
  double sync_us = 0;           // pool fork/join per active thread
  std::string how;              // what was run to measure them
};

struct Profile {
  // 2: peaks from the Xbyak probes (version 1 profiles hold a vpdpbusd rate twice the real one).
  static constexpr int kVersion = 2;
  MachineIdentity machine;
  std::string created_utc;      // ISO 8601
  std::optional<MeasuredPeaks> peaks;
  std::vector<ProfileEntry> entries;

  // The entry for `shape` (and for `runner`, unless empty); nullptr if none.
  const ProfileEntry* find(const OpShape& shape, const std::string& runner = "") const;
  // Replaces the entry with the same shape and runner, or appends.
  void upsert(ProfileEntry e);
  std::string to_json() const;
};

// Parses a profile document; throws ckjit::Error on anything malformed or out of range.
Profile parse_profile(const std::string& json);

// $XDG_CACHE_HOME/ckjit when XDG_CACHE_HOME is an absolute path, else $HOME/.cache/ckjit;
// throws ckjit::Error when neither is usable.
std::string profile_directory();
std::string profile_path(const MachineIdentity& id);  // <dir>/profile-<key>.json

// Writes atomically (temp file + rename), creating the directory; throws ckjit::Error on failure.
void save_profile(const Profile& p, const std::string& path);

struct ProfileLoad {
  std::optional<Profile> profile;
  std::string path;
  std::string warning;  // why the file was ignored; empty when loaded or simply absent
};
// Never throws. Absent file: no profile, no warning.
ProfileLoad load_profile(const std::string& path, const MachineIdentity& expected);
ProfileLoad load_profile_for(const topo::Machine& m);

// One line for `ckjit run` / libckjit: "profile: <path> (3 shapes)", "profile: none for this machine
// (<path>)", or "profile: ignored <path>: <warning>".
std::string describe_profile_load(const ProfileLoad& l);

}  // namespace ckjit
