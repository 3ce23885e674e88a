#pragma once
// `ckjit serve`: loads the model through the C API, opens the sessions and serves HTTP until
// SIGINT or SIGTERM (then returns 0 once in-flight requests have stopped).
#include "tools/serve/server_state.h"

namespace ckjit::serve {

// Returns the process exit status; errors before serving (model, port) are thrown as std::exception.
int run_server(const ServerOptions& options);

}  // namespace ckjit::serve
