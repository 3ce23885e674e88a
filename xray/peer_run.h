#pragma once
// Records llama.cpp's reference for ckjit xray with peer-cli (../shared/peer): the prompt on the
// trajectory (--force), batched as llama.cpp runs a prompt and once more one token per batch
// (-b 1 -ub 1, its envelope), each with --dump-tensors (and --dump-embd for an image).
#include <string>
#include <vector>

namespace ckjit::xray {

struct XrayOptions;

struct LlamaDumps {
  std::string batched, serial;          // --dump-tensors DIRs
  std::string embd, embd_serial;        // --dump-embd files ("" without an image)
  std::string root;                     // the folder holding them when recorded here
};

// peer-cli from --peer or CKJIT_PEER_CLI; Error naming both when neither is given or it is missing.
std::string find_peer_cli(const std::string& given);
LlamaDumps record_llama_dumps(const XrayOptions& o, const std::vector<int32_t>& trajectory, bool image);
void remove_llama_dumps(const LlamaDumps& d);
// Dumps recorded by xray (--dump-dir) keep the trajectory they were forced on next to them
// (trajectory.txt); Error when it is not this run's (the rows would not line up).
void check_recorded_trajectory(const LlamaDumps& d, const std::vector<int32_t>& trajectory);

}  // namespace ckjit::xray
