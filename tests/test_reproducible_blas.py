"""MKL's strict reproducible mode: a product does not depend on its operands' memory alignment."""

from __future__ import annotations

import os
import subprocess
import sys

import torch


def test_products_are_bitwise_equal_at_every_alignment():
    assert os.environ.get("MKL_CBWR") == "AUTO,STRICT"  # set by tests/conftest.py before torch
    g = torch.Generator().manual_seed(0)
    for n in (7, 33, 97, 130):
        a = torch.randn(n, n, generator=g, dtype=torch.float64)
        b = torch.randn(n, n, generator=g, dtype=torch.float64)
        v = torch.randn(n, generator=g, dtype=torch.float64)
        base, base_v = a @ b, a @ v
        for offset in range(1, 8):  # shift the operands by 8-byte steps inside a buffer
            buf_a = torch.empty(n * n + offset, dtype=torch.float64)
            buf_b = torch.empty(n * n + offset, dtype=torch.float64)
            buf_v = torch.empty(n + offset, dtype=torch.float64)
            buf_a[offset:], buf_b[offset:], buf_v[offset:] = a.reshape(-1), b.reshape(-1), v
            shifted_a = buf_a[offset:].view(n, n)
            assert torch.equal(shifted_a @ buf_b[offset:].view(n, n), base)
            assert torch.equal(shifted_a @ buf_v[offset:], base_v)


def test_importing_the_package_first_sets_strict_mode_unless_the_user_chose():
    code = ("import os, transformer_math, torch; print(os.environ.get('MKL_CBWR'))")
    env = {k: v for k, v in os.environ.items() if k != "MKL_CBWR"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "AUTO,STRICT"
    env["MKL_CBWR"] = "COMPATIBLE"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "COMPATIBLE"
