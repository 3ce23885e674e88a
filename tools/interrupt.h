#pragma once
// Ctrl-C during generation: the first SIGINT asks the decode loop to stop after the current token,
// so the run still prints its text, timing line and report; a second one ends the process as usual.
namespace ckjit::cli {

void catch_interrupt();  // installs the one-shot handler
bool interrupted();

}  // namespace ckjit::cli
