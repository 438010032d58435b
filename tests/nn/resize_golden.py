# The golden values of tests/nn/test_interpolate.cpp: PyTorch's bilinear
# F.interpolate (align_corners=False) of a channels-last grid, printed as C++ initializers.
#   /usr/bin/python3 tests/nn/resize_golden.py
import torch
import torch.nn.functional as F

x = (torch.arange(2 * 3 * 2, dtype=torch.float32) ** 1.5).view(2, 3, 2)  # (H, W, C), not linear in the index
for size in [(3, 5), (4, 7), (1, 2)]:
    y = F.interpolate(x.permute(2, 0, 1)[None], size=size, mode="bilinear", align_corners=False)[0].permute(1, 2, 0)
    print("// size", size)
    print("{" + ", ".join(f"{v:.7g}f" for v in y.flatten().tolist()) + "}")
