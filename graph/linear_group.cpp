#include "graph/linear_group.h"

#include "runtime/error.h"

namespace ckjit::graph {

LinearGroup::LinearGroup(std::initializer_list<const Linear*> members) {
  if (members.size() == 0 || members.size() > size_t(kMax)) throw Error("linear group: 1 to 3 members");
  for (const Linear* l : members) {
    if (l->k() != (*members.begin())->k()) throw Error("linear group: members read inputs of different widths");
    lin_[size_t(n_++)] = l;
  }
}

int64_t LinearGroup::scratch_bytes(int64_t m) const {
  int64_t bytes = 0;
  for (int i = 0; i < n_; ++i) {
    bool first = true;  // only the first member of each activation type books a buffer
    for (int j = 0; j < i; ++j) first = first && lin_[size_t(j)]->act_type() != lin_[size_t(i)]->act_type();
    if (first) bytes += (m * lin_[size_t(i)]->act_row_bytes() + 63) / 64 * 64;
  }
  return bytes;
}

void LinearGroup::prepare(Workers& pool, const float* x, int64_t ldx, int64_t m, void* scratch) {
  uint8_t* next = static_cast<uint8_t*>(scratch);
  for (int i = 0; i < n_; ++i) {
    const Linear& l = *lin_[size_t(i)];
    int same = -1;
    for (int j = 0; j < i && same < 0; ++j)
      if (lin_[size_t(j)]->act_type() == l.act_type()) same = j;
    if (same >= 0) {
      input_[size_t(i)] = input_[size_t(same)];
      continue;
    }
    l.prepare(pool, x, ldx, m, next);
    input_[size_t(i)] = next;
    next += (m * l.act_row_bytes() + 63) / 64 * 64;
  }
}

}  // namespace ckjit::graph
