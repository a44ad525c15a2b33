// The default pass registry and pipeline of the optimise stage.
#include "engine/passes/passes.h"

namespace tessera::passes {

// canonicalize and constant-fold feed each other (a folded shape enables a Reshape rule, a
// removed Identity exposes a constant), so they share a fixpoint; batch-norm folding runs before
// fusion so that Conv+BN+Relu becomes one FusedConv; pattern fusion (Swish, Gelu, LayerNorm...)
// before fuse, so that a Conv or MatMul absorbs the activations it made; dce last removes what
// fusion left.
// widen-f16 comes first: float16 models compute in float32 (widen_f16.cpp says why), and every
// later pass sees float32. qdq-fuse next: it turns quantized Conv / Gemm / MatMul patterns into integer ops before
// anything else rewrites the float ops between the QuantizeLinear / DequantizeLinear pairs.
const char* const kDefaultPipeline =
    "widen-f16,qdq-fuse,fixpoint(canonicalize,constant-fold),dce,cse,fuse-patterns,fold-batchnorm,fuse,dce";

PassRegistry default_pass_registry() {
  PassRegistry r;
  r.add("canonicalize", [] { return make_canonicalize_pass(); });
  r.add("constant-fold", [] { return make_constant_fold_pass(); });
  r.add("cse", [] { return make_cse_pass(); });
  r.add("dce", [] { return make_dce_pass(); });
  r.add("fold-batchnorm", [] { return make_fold_batchnorm_pass(); });
  r.add("fuse-patterns", [] { return make_fuse_patterns_pass(); });
  r.add("fuse", [] { return make_fuse_pass(); });
  r.add("qdq-fuse", [] { return make_qdq_fuse_pass(); });
  r.add("widen-f16", [] { return make_widen_f16_pass(); });
  return r;
}

}  // namespace tessera::passes
