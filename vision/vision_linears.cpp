// VisionModel::linears_by_tensor: which file tensor each VisionMatmul came from (kept out of
// vision_model.cpp, which is the encoder).
#include "vision/vision_model.h"

namespace ckjit::vision {

std::vector<std::pair<std::string, const VisionMatmul*>> VisionModel::linears_by_tensor() const {
  std::vector<std::pair<std::string, const VisionMatmul*>> out;
  out.emplace_back("v.patch_embd.weight", patch_.get());
  out.emplace_back("v.patch_embd.weight.1", patch_.get());  // summed into the one kernel at load
  for (const Layer& L : layers_)
    for (const VisionMatmul* d : {L.qkv.get(), L.out.get(), L.up.get(), L.down.get()}) out.emplace_back(d->name(), d);
  for (const Merger* m : {&main_})
    for (const VisionMatmul* d : {m->fc1.get(), m->fc2.get()}) out.emplace_back(d->name(), d);
  for (const Merger& m : deepstack_)
    for (const VisionMatmul* d : {m.fc1.get(), m.fc2.get()}) out.emplace_back(d->name(), d);
  return out;
}

}  // namespace ckjit::vision
