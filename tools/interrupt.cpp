#include "tools/interrupt.h"

#include <csignal>

namespace ckjit::cli {

namespace {
volatile std::sig_atomic_t g_interrupted = 0;
void on_sigint(int) { g_interrupted = 1; }
}  // namespace

void catch_interrupt() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sa.sa_flags = SA_RESETHAND;  // the second Ctrl-C takes the default action
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
}

bool interrupted() { return g_interrupted != 0; }

}  // namespace ckjit::cli
