#pragma once
// The CLI's signals. Ctrl-C during generation: the first SIGINT asks the decode loop to stop after
// the current token, so the run still prints its text, timing line and report; a second one ends
// the process as usual.
namespace ckjit::cli {

void catch_interrupt();  // installs the one-shot handler
bool interrupted();

// A model file truncated or replaced while it is mapped makes the next read of its pages raise
// SIGBUS; this turns that into one clear line and exit status 1 instead of a bus-error crash.
void catch_bus_errors();

}  // namespace ckjit::cli
