// Convolution blocks with frozen-to-be weights (buffers), as CNNs write them: the CPU and GPU
// tests of the convolution-bias rewrite share them.
#pragma once

#include <string>

#include <torch/script.h>
#include <torch/torch.h>

namespace tftest {

// x [N, C, H, W]: 3x3 conv + ReLU, 1x1 conv, `+=` the block's input, ReLU.
constexpr const char* kResidualBlock = R"JIT(
def forward(self, x):
    h = torch.relu(torch.conv2d(x, self.w1, self.b1, [1, 1], [1, 1]))
    y = torch.conv2d(h, self.w2, self.b2)
    y += x
    return torch.relu(y)
)JIT";

// A convolution without bias and a batch norm after it (freeze() folds it in) + ReLU.
constexpr const char* kConvBatchNormRelu = R"JIT(
def forward(self, x):
    y = torch.conv2d(x, self.w1, None, [1, 1], [1, 1])
    return torch.relu(torch.batch_norm(y, self.g, self.b2, self.rm, self.rv, False, 0.1, 1e-5, True))
)JIT";

// A biased convolution read by a pooling op.
constexpr const char* kConvPool = R"JIT(
def forward(self, x):
    return torch.max_pool2d(torch.conv2d(x, self.w1, self.b1, [1, 1], [1, 1]), [2, 2])
)JIT";

// A biased convolution + ReLU viewed flat: the view needs the layout eager had.
constexpr const char* kConvReluView = R"JIT(
def forward(self, x):
    y = torch.relu(torch.conv2d(x, self.w1, self.b1, [1, 1], [1, 1]))
    return y.view(y.size(0), -1)
)JIT";

// A ConvNeXt block: depthwise 7x7 convolution, read as [N, H, W, C] by a layer norm, back to
// [N, C, H, W], plus the block's input.
constexpr const char* kConvNextBlock = R"JIT(
def forward(self, x):
    y = torch.conv2d(x, self.wd, self.b1, [1, 1], [3, 3], [1, 1], x.size(1)).permute(0, 2, 3, 1)
    y = torch.layer_norm(y, [y.size(3)], self.g, self.b2, 1e-6)
    return y.permute(0, 3, 1, 2) + x
)JIT";

// ConvNeXt's stem and first two blocks as transformers writes them: a channels-first layer norm
// (permute, norm, permute back) after the stem's convolution, then blocks whose layer scale and
// residual add read norms' channels-last results (permutes of row-major [N, H, W, C] tensors), and
// the last block's result returned (channels-last in eager too).
constexpr const char* kConvNextStem = R"JIT(
def forward(self, x):
    p = torch.conv2d(x, self.w2, self.b1, [1, 1], [0, 0], [1, 1], 1).permute(0, 2, 3, 1)
    h = torch.layer_norm(p, [p.size(3)], self.g, self.b2, 1e-6).permute(0, 3, 1, 2)
    y = torch.conv2d(h, self.wd, self.b1, [1, 1], [3, 3], [1, 1], h.size(1)).permute(0, 2, 3, 1)
    y = torch.relu(torch.layer_norm(y, [y.size(3)], self.g, self.b2, 1e-6))
    h = h + y.permute(0, 3, 1, 2) * self.rv.view([-1, 1, 1])
    y = torch.conv2d(h, self.wd, self.b1, [1, 1], [3, 3], [1, 1], h.size(1)).permute(0, 2, 3, 1)
    y = torch.relu(torch.layer_norm(y, [y.size(3)], self.g, self.b2, 1e-6))
    return h + y.permute(0, 3, 1, 2) * self.rv.view([-1, 1, 1])
)JIT";

// ConvNeXt's last block of a stage and the downsampling after it: the block's scaled branch (a
// linear of its norm) plus its input (a convolution's result), read by a channels-first layer
// norm (permuted to [N, H, W, C] and back) and a strided convolution.
constexpr const char* kConvNextDownsample = R"JIT(
def forward(self, x):
    x = torch.conv2d(x, self.w2, self.b2)
    y = torch.conv2d(x, self.wd, self.b1, [1, 1], [3, 3], [1, 1], x.size(1)).permute(0, 2, 3, 1)
    y = torch.linear(torch.layer_norm(y, [y.size(3)], self.g, self.b2, 1e-6), self.w2.flatten(1))
    h = x + (y * self.rv).permute(0, 3, 1, 2)
    d = h.permute(0, 2, 3, 1)
    d = torch.layer_norm(d, [d.size(3)], self.g, self.b1, 1e-6).permute(0, 3, 1, 2)
    return torch.conv2d(d, self.w1, self.b1, [2, 2], [1, 1])
)JIT";

// A backbone's outputs as transformers returns them, in a dict: ConvNeXt's stem and a block
// (its result channels-last in eager too: the block's input is a norm's permuted result), and the
// pooler's mean over H and W.
constexpr const char* kConvNextPooled = R"JIT(
def forward(self, x) -> Dict[str, Tensor]:
    p = torch.conv2d(x, self.w2, self.b1, [1, 1], [0, 0], [1, 1], 1).permute(0, 2, 3, 1)
    h = torch.layer_norm(p, [p.size(3)], self.g, self.b2, 1e-6).permute(0, 3, 1, 2)
    y = torch.conv2d(h, self.wd, self.b1, [1, 1], [3, 3], [1, 1], h.size(1)).permute(0, 2, 3, 1)
    y = torch.layer_norm(y, [y.size(3)], self.g, self.b2, 1e-6)
    h = h + (y * self.rv).permute(0, 3, 1, 2)
    return {"last_hidden_state": h, "pooler_output": h.mean([2, 3])}
)JIT";

// A feature map returned with its mean: eager's map is contiguous (NCHW), and so is the copy the
// mean may read.
constexpr const char* kConvReluPooled = R"JIT(
def forward(self, x):
    y = torch.relu(torch.conv2d(x, self.w1, self.b1, [1, 1], [1, 1]))
    return y, y.mean([2, 3])
)JIT";

// The same map pooled as ResNet's pooler does (adaptive_avg_pool2d to 1 x 1).
constexpr const char* kConvReluGlobalPool = R"JIT(
def forward(self, x):
    y = torch.relu(torch.conv2d(x, self.w1, self.b1, [1, 1], [1, 1]))
    return y, torch.adaptive_avg_pool2d(y, [1, 1])
)JIT";

// The module of one of the blocks above for `channels` channels: weights with fresh random values.
inline torch::jit::Module conv_block_module(const std::string& source, int64_t channels, const torch::TensorOptions& opts) {
  torch::jit::Module m("ConvBlock");
  const double fan = 1.0 / std::sqrt(static_cast<double>(channels * 9));
  m.register_buffer("w1", (torch::randn({channels, channels, 3, 3}) * fan).to(opts));
  m.register_buffer("wd", (torch::randn({channels, 1, 7, 7}) / 7.0).to(opts));
  m.register_buffer("b1", torch::randn({channels}).to(opts));
  m.register_buffer("w2", (torch::randn({channels, channels, 1, 1}) / std::sqrt(static_cast<double>(channels))).to(opts));
  m.register_buffer("b2", torch::randn({channels}).to(opts));
  m.register_buffer("g", (1.0 + 0.5 * torch::randn({channels})).to(opts));
  m.register_buffer("rm", torch::randn({channels}).to(opts));
  m.register_buffer("rv", (0.2 + torch::rand({channels}) * 2.0).to(opts));
  m.define(source);
  return m;
}

}  // namespace tftest
