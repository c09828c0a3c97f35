// torchfuse::attention (see attention_op.h).
