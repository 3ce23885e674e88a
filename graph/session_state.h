#pragma once
// A session's KV rows saved to a stream and read back (llama_state_save_file / load_file): a
// long prompt or a page prefilled once, reused by later processes. The file holds a header (the
// model's fingerprint, the KV shape), the positions after each row, the KV runs of the rows and
// a checksum. Loading checks all of it before the session changes: another model, another KV
// layout, more rows than the context, a cut or altered file — each a clear Error.
#include <iosfwd>

#include "graph/session.h"

namespace ckjit::graph {

// Dimensions and a sample of the token embedding's bytes: tells the same model file from another.
uint64_t model_fingerprint(const TextModel& model);

void save_session_state(const Session& s, std::ostream& out);
// Replaces s's rows with the saved ones; on an Error s is left empty (n_past 0).
void load_session_state(Session& s, std::istream& in);

}  // namespace ckjit::graph
