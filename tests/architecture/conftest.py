"""One intra-op thread: the machine is shared and the tensors here are tiny."""

import torch

torch.set_num_threads(1)
