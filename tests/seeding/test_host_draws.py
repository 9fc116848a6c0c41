"""The CPU streams' numpy draws for any subset of envs: bitwise the words of the torch op-by-op path."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from redline.seeding import EnvStreams
from redline.seeding.host_draws import host_words
from redline.seeding.streams import Domain


def pair(num_envs: int = 64) -> tuple[EnvStreams, EnvStreams]:
    """The same streams twice: the CPU's numpy path and the torch op-by-op path (its host views dropped)."""
    host = EnvStreams("per_env", 11, num_envs, "cpu", env_id_offset=3 * num_envs)
    torch_path = EnvStreams("per_env", 11, num_envs, "cpu", env_id_offset=3 * num_envs)
    torch_path._host = None
    assert host._host is not None
    return host, torch_path


@pytest.mark.parametrize("kind", ["int32 tensor", "int64 tensor", "list"])
def test_subset_draws_equal_the_torch_path(kind: str) -> None:
    host, reference = pair()
    gen = torch.Generator().manual_seed(5)
    for s in (host, reference):
        s.begin_episode()
    for step in range(40):
        ids = torch.randint(0, 64, (int(torch.randint(1, 20, (1,), generator=gen)),), generator=gen)  # repeats too
        count = int(torch.randint(1, 14, (1,), generator=gen))
        env_ids = {"int32 tensor": ids.to(torch.int32), "int64 tensor": ids, "list": ids.tolist()}[kind]
        for s in (host, reference):
            s.begin_episode(ids[: step % 3])  # some envs start a new episode between draws
        assert torch.equal(host.words(env_ids, count), reference.words(env_ids, count)), step
        assert torch.equal(host.uniform(env_ids, (count,), -0.5, 2.0), reference.uniform(env_ids, (count,), -0.5, 2.0))
        policy = host.normal(env_ids, (2, count), domain=Domain.POLICY)
        assert torch.equal(policy, reference.normal(env_ids, (2, count), domain=Domain.POLICY))
        assert torch.equal(host.blocks_used, reference.blocks_used)
        assert torch.equal(host._blocks_used_policy, reference._blocks_used_policy)


def test_whole_batch_and_subset_interleave_as_on_the_torch_path() -> None:
    host, reference = pair(16)
    for s in (host, reference):
        s.begin_episode()
    for count in (3, 12, 5):
        assert torch.equal(host.uniform(None, (count,)), reference.uniform(None, (count,)))
        assert torch.equal(host.uniform([1, 4, 4], (count,)), reference.uniform([1, 4, 4], (count,)))


def test_a_repeated_env_advances_once() -> None:
    used = np.zeros(4, dtype=np.int64)
    ids = np.array([2, 2, 0])
    global_ids, episode = np.arange(4, dtype=np.uint32)[:, None], np.zeros(4, dtype=np.int64)
    words = host_words(ids, 6, 0, global_ids, episode, used, (1, 2))
    assert used.tolist() == [2, 0, 2, 0]  # ceil(6 / 4) blocks, once per distinct env
    assert np.array_equal(words[0], words[1]) and words.shape == (3, 6)
