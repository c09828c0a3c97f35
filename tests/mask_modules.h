// Hugging Face's padding mask as BERT builds it, for the tests of passes/view_arange_indices.h on
// the CPU and the GPU.
#pragma once

namespace tftest {

// The [B, S] mask cast to bool, indexed by an arange of the batch along dim 0 and an arange of the
// key positions (plus an offset of 0) along dim 3, then applied to y, [B, H, Q, S].
constexpr const char* kArangeIndexedMask = R"JIT(
def forward(self, mask, y):
    m = mask.to(11)  # torch.bool
    b = torch.arange(y.size(0), device=m.device)[:, None, None, None]
    k = (torch.arange(m.size(1), device=m.device) + 0)[None, None, None, :]
    return torch.where(m[b, k], y, -1.0) * 2.0
)JIT";

}  // namespace tftest
