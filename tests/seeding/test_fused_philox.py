"""The fused Philox draw: one compiled kernel, bitwise equal to the op-by-op :func:`philox4x32` on every input."""

from __future__ import annotations

import pytest
import torch

from redline.seeding import Domain, EnvStreams, fused_philox4x32, philox4x32

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def _words(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 2**32, shape, generator=g, dtype=torch.int64)


def test_fused_equals_op_by_op() -> None:
    """Random counters (every bit pattern, including words near 2^32) and keys, for several batch shapes."""
    draw = fused_philox4x32("aot_eager")
    for i, shape in enumerate([(37, 4), (5, 3, 4), (1, 4)]):
        counter, key = _words(shape, i), _words((2,), 10 + i)
        assert torch.equal(draw(counter, key), philox4x32(counter, (int(key[0]), int(key[1])))), shape
    with pytest.raises(ValueError, match="one key of shape"):
        draw(counter, _words((1, 2), 0))


def test_known_answer() -> None:
    """Random123's known-answer vector for Philox4x32-10 (counter and key all ones), through the fused draw."""
    counter = torch.full((1, 4), 0xFFFFFFFF, dtype=torch.int64)
    key = torch.full((2,), 0xFFFFFFFF, dtype=torch.int64)
    expected = [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]
    assert fused_philox4x32("aot_eager")(counter, key)[0].tolist() == expected


def test_streams_fused_draws_equal_unfused() -> None:
    """Per-env streams through the fused draw: the same uniforms and normals, for every env subset and count."""
    fused = EnvStreams("per_env", 7, 12, "cpu", fused=True, fused_backend="aot_eager")
    plain = EnvStreams("per_env", 7, 12, "cpu", fused=False)
    assert fused.fused and not plain.fused
    for s in (fused, plain):
        s.begin_episode()
    for ids, shape in ((None, (3,)), ([0, 5, 11], (7,)), ([2], (2, 2))):
        assert torch.equal(fused.uniform(ids, shape), plain.uniform(ids, shape))
        assert torch.equal(
            fused.normal(ids, shape, domain=Domain.POLICY), plain.normal(ids, shape, domain=Domain.POLICY)
        )


def test_fused_is_chosen_on_cuda_only() -> None:
    assert not EnvStreams("per_env", 0, 4, "cpu").fused


def test_host_draws_equal_torch_draws_and_advance_the_same_counters() -> None:
    """On the CPU a draw for every env goes through numpy; the words, uniforms and normals and the counters after
    them equal the torch path's, for every count (partial blocks included), both domains, and envs in different
    episodes (one never reset: episode -1)."""
    host = EnvStreams("per_env", 7, 10, "cpu")
    plain = EnvStreams("per_env", 7, 10, "cpu")
    plain._host = None  # the torch op-by-op path
    assert host._host is not None
    for s in (host, plain):
        s.begin_episode([i for i in range(1, 10) if i % 3])
    for count in (1, 3, 8, 13):
        for domain in Domain:
            assert torch.equal(host.words(None, count, domain), plain.words(None, count, domain))
            assert torch.equal(
                host.uniform(None, (2, count), 1.0, 3.0, domain), plain.uniform(None, (2, count), 1.0, 3.0, domain)
            )
            assert torch.equal(host.normal(None, (count,), domain=domain), plain.normal(None, (count,), domain=domain))
            assert torch.equal(
                host.uniform([0, 4], (count,), domain=domain), plain.uniform([0, 4], (count,), domain=domain)
            )
        for s in (host, plain):
            s.begin_episode([0, 5])
    for key, value in plain.state_dict().items():
        assert torch.equal(host.state_dict()[key], value), key


@needs_cuda
def test_cuda_fused_equals_cpu() -> None:
    """On CUDA the default is the inductor-fused kernel; its draws equal the CPU's op-by-op ones bitwise."""
    gpu = EnvStreams("per_env", 11, 64, "cuda")
    cpu = EnvStreams("per_env", 11, 64, "cpu", fused=False)
    assert gpu.fused
    for s in (gpu, cpu):
        s.begin_episode()
    for count in (3, 8, 13):
        assert torch.equal(gpu.uniform(None, (count,)).cpu(), cpu.uniform(None, (count,)))
    counter = _words((4096, 4), 5)
    key = _words((2,), 6)
    assert torch.equal(
        fused_philox4x32()(counter.cuda(), key.cuda()).cpu(), philox4x32(counter, (int(key[0]), int(key[1])))
    )
