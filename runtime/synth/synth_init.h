#pragma once
// The spread of each random weight of a synthetic Qwen3-VL. Plain small-std init (0.02 everywhere)
// makes a random model collapse to one repeated token, so: fan-in scaled matrices (unit-variance
// outputs), a gain on the FFN gate/up so layers change the residual noticeably, residual updates of
// layers after the first scaled by 1/sqrt(layers) (keeps a deep random net from being chaotic, so
// implementations that round differently still agree), Q/K-norm weights
// around 2 so attention is not uniform, small token embeddings (1/sqrt(E)) so the residual is not
// dominated by the input token (tied output would then just repeat it), and output_norm =
// sharpness, which sets the standard deviation of the logits (top-1 probability ~2e-4 at 1, ~0.6 at
// 10). Sharpness rescales all logits alike: argmax and relative top-1/top-2 margins do not change.
// chain (see SynthOptions::chain) scales every residual update down by kChainResidual / sqrt(E)
// instead, so that the input token's embedding stays the dominant part of the residual stream.
#include "runtime/synth/qwen3vl_layout.h"
#include "runtime/synth/random_tensor.h"

namespace ckjit::synth {

// Chain models: each residual update (attn_output, ffn_down) has about this rms relative to the
// token embedding's (rms 1/sqrt(E)), so the embedding dominates the final hidden state while
// attention and the FFN still move every logit.
constexpr float kChainResidual = 0.25f;

// Error for a name that is not part of the layout.
WeightInit text_weight_init(const qwen3vl::TensorSpec& t, const qwen3vl::TextDims& d, float sharpness,
                            bool chain = false);
WeightInit mmproj_weight_init(const qwen3vl::TensorSpec& t, const qwen3vl::VisionDims& v);

}  // namespace ckjit::synth
