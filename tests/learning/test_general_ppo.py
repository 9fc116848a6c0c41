"""One update of redline's drop-in against rsl_rl 5.5.1's real ``PPO``, for every feature of rsl_rl's agent config.

Each case builds rsl_rl's PPO with its own ``construct_algorithm`` and redline's with
``redline.learning.rsl_rl:PPO.construct_algorithm`` from the same runner config, torch's generator seeded alike
before each (same initial weights), drives both through the same rollout (same observations, rewards, terminations,
time-outs; the policies sample from torch's global generator, seeded alike per step), then takes one ``update()``
with the same minibatch permutation, in fp32 on the CPU, and compares the mean losses, the learning rate and every
parameter and buffer of the actor, the critic and RND's predictor.

Tolerance ``ATOL = 1e-5``: redline's update computes rsl_rl's formulas with other kernels (fused Adam/AdamW/SGD
against torch's per-tensor loops, one flat all-reduce against rsl_rl's buckets, the KL-adaptive rate as an fp32 device
tensor against a Python float), so the two agree to float32 rounding, ~1e-7 after the update's 12 steps of size
<= lr (~1e-3) at most. A change of the maths moves them by far more: each case is also run against a deliberate
change (``MUTANTS``) and the comparison must fail.
"""

from __future__ import annotations

import copy
import datetime
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from rsl_rl.algorithms import PPO as RslPPO
from tensordict import TensorDict

from redline.errors import UserError
from redline.learning.general_ppo import GeneralPPO
from redline.learning.rsl_rl import CLASS_PATH, general_feature
from redline.learning.rsl_rl import PPO as DropIn
from tests.learning.test_rsl_rl_equivalence import ALGORITHM  # the fast learner's equivalence case's settings

T, N, A = 8, 16, 3
"""Rollout steps, envs, action dims."""
IMAGE = (2, 8, 8)
"""The 2-D observation group ``image``: channels, height, width."""
ATOL = 1e-5
"""See the module docstring."""
PERMUTATION_SEED = 1234


class StandIn:
    """The env surface rsl_rl's ``construct_algorithm`` reads: sizes, ``unwrapped.step_dt`` (RND scales its weight
    by it) and the observations, for the observation shapes."""

    def __init__(self, num_envs: int = N, seed: int = 0) -> None:
        self.num_envs, self.num_actions = num_envs, A
        self.unwrapped = self
        self.step_dt = 0.02
        self.g = torch.Generator().manual_seed(seed)

    def get_observations(self) -> TensorDict:
        """``policy`` ``(N, 5)``, ``critic`` ``(N, 7)``, ``image`` ``(N, 2, 8, 8)``, offset and scaled."""
        n, g = self.num_envs, self.g
        return TensorDict(
            {
                "policy": 2.0 + 3.0 * torch.randn(n, 5, generator=g),
                "critic": -1.0 + 0.5 * torch.randn(n, 7, generator=g),
                "image": torch.rand(n, *IMAGE, generator=g),
            },
            batch_size=[n],
        )


def mirror(env: Any, obs: TensorDict | None = None, actions: torch.Tensor | None = None) -> tuple[Any, Any]:
    """A left-right symmetry for the stand-in: the originals, then their mirror images (the policy observation and
    the actions negated), as rsl_rl's ``data_augmentation_func`` returns them."""
    out_obs = None
    if obs is not None:
        flipped = obs.clone()
        flipped["policy"] = -obs["policy"]
        out_obs = torch.cat([obs, flipped])
    out_actions = None if actions is None else torch.cat([actions, -actions])
    return out_obs, out_actions


MLP = {"class_name": "rsl_rl.models.MLPModel", "hidden_dims": [16, 16], "activation": "elu", "obs_normalization": True}
GAUSSIAN = {"class_name": "rsl_rl.modules.GaussianDistribution", "init_std": 0.8, "std_type": "scalar"}


def runner_cfg(**changes: Any) -> dict[str, Any]:
    """An rsl_rl 5.5.1 runner config with an MLP actor/critic and adaptive PPO (the settings of the fast learner's
    equivalence test: 3 epochs x 4 minibatches, value-loss coefficient 0.7); ``changes`` replace whole entries of
    ``actor``, ``critic`` or ``algorithm`` (``actor={...}`` is merged into the MLP actor's dict)."""
    cfg: dict[str, Any] = {
        "num_steps_per_env": T,
        "obs_groups": {"actor": ["policy"], "critic": ["critic"]},
        "actor": MLP | {"distribution_cfg": GAUSSIAN},
        "critic": dict(MLP),
        "algorithm": {"class_name": "PPO", **ALGORITHM, "optimizer": "adam"},
        "multi_gpu": None,
    }
    for key, value in changes.items():
        if key == "obs_groups":
            cfg[key] = value
        else:
            cfg[key] = cfg[key] | value
    return cfg


RNN = {"class_name": "rsl_rl.models.RNNModel", "rnn_hidden_dim": 8}
CNN = {"cnn_cfg": {"output_channels": [4], "kernel_size": 3, "flatten": True}, "class_name": "rsl_rl.models.CNNModel"}
IMAGE_GROUPS = {"actor": ["policy", "image"], "critic": ["critic", "image"]}
RND_GROUPS = {"actor": ["policy"], "critic": ["critic"], "rnd_state": ["critic"]}
RND = {
    "weight": 50.0,
    "weight_schedule": {"mode": "step", "final_step": 4, "final_value": 10.0},
    "reward_normalization": True,
    "state_normalization": True,
    "learning_rate": 2e-3,
    "num_outputs": 4,
    "predictor_hidden_dims": [16],
    "target_hidden_dims": [16],
}
CASES: dict[str, dict[str, Any]] = {
    "gru": runner_cfg(actor=RNN | {"rnn_type": "gru"}, critic=RNN | {"rnn_type": "gru"}),
    "lstm_2_layers": runner_cfg(actor=RNN | {"rnn_num_layers": 2}, critic=RNN | {"rnn_num_layers": 2}),
    "lstm_actor_mlp_critic": runner_cfg(actor=RNN),
    "cnn": runner_cfg(obs_groups=IMAGE_GROUPS, actor=CNN, critic=CNN),
    "cnn_shared": runner_cfg(obs_groups=IMAGE_GROUPS, actor=CNN, critic=CNN, algorithm={"share_cnn_encoders": True}),
    "beta": runner_cfg(actor={"distribution_cfg": {"class_name": "rsl_rl.modules.BetaDistribution"}}),
    "heteroscedastic": runner_cfg(
        actor={"distribution_cfg": {"class_name": "rsl_rl.modules.HeteroscedasticGaussianDistribution"}}
    ),
    "log_std_fixed": runner_cfg(actor={"distribution_cfg": GAUSSIAN | {"std_type": "log", "learn_std": False}}),
    "symmetry_augmentation": runner_cfg(
        algorithm={"symmetry_cfg": {"use_data_augmentation": True, "data_augmentation_func": mirror}}
    ),
    "symmetry_mirror_loss": runner_cfg(
        algorithm={
            "symmetry_cfg": {"use_mirror_loss": True, "mirror_loss_coeff": 0.5, "data_augmentation_func": mirror}
        }
    ),
    "rnd": runner_cfg(obs_groups=RND_GROUPS, algorithm={"rnd_cfg": RND}),
    # RND's predictor trains with its own Adam whatever PPO's optimizer is (rsl_rl's RandomNetworkDistillation)
    "rnd_sgd": runner_cfg(obs_groups=RND_GROUPS, algorithm={"rnd_cfg": RND, "optimizer": "sgd", "learning_rate": 3e-2}),
    "adamw": runner_cfg(algorithm={"optimizer": "adamw"}),
    "sgd": runner_cfg(algorithm={"optimizer": "sgd", "learning_rate": 3e-2}),
    "rmsprop": runner_cfg(algorithm={"optimizer": "rmsprop"}),
    "adamw_fixed_lr_per_minibatch_advantages": runner_cfg(
        algorithm={
            "optimizer": "adamw",
            "schedule": "fixed",
            "normalize_advantage_per_mini_batch": True,
            "use_clipped_value_loss": False,
        }
    ),
}
"""Every PPO feature of rsl_rl 5.5.1's agent config that the fast learner does not take."""


def _clip_more(alg: Any) -> None:
    alg.clip_param = 0.21


def _mirror_weight(alg: Any) -> None:
    alg.symmetry.mirror_loss_coeff *= 1.1


def _rnd_lr(alg: Any) -> None:
    alg.rnd.optimizer.param_groups[0]["lr"] *= 1.1


def _weight_decay(alg: Any) -> None:
    alg.optimizer.param_groups[0]["weight_decay"] *= 1.1


def _reset_hidden(alg: Any) -> None:  # the recurrent minibatches start from zero hidden states instead of the stored
    alg.storage.saved_hidden_state_a = [torch.zeros_like(s) for s in alg.storage.saved_hidden_state_a]


MUTANTS: dict[str, Callable[[Any], None]] = {
    "gru": _reset_hidden,
    "lstm_2_layers": _reset_hidden,
    "symmetry_mirror_loss": _mirror_weight,
    "rnd": _rnd_lr,
    "rnd_sgd": _rnd_lr,
    "adamw": _weight_decay,
}
"""A change of each case's own feature that the comparison must catch (others: the clip range 0.2 -> 0.21)."""


def _rollout(alg: Any, env: StandIn, data: torch.Generator) -> None:
    """T steps: the env's answers from ``data`` (the same for both learners), the action samples from torch's global
    generator seeded per step."""
    obs = env.get_observations()
    with torch.inference_mode():
        for t in range(T):
            torch.manual_seed(100 + t)
            alg.act(obs)
            rewards = torch.randn(N, generator=data)
            terminated = torch.rand(N, generator=data) < 0.1
            time_outs = torch.rand(N, generator=data) < 0.15
            obs = env.get_observations()
            alg.process_env_step(obs, rewards, (terminated | time_outs).long(), {"time_outs": time_outs})
        alg.compute_returns(obs)


def _trained(cfg: dict[str, Any], ours: bool, mutate: Callable[[Any], None] | None = None) -> tuple[Any, dict]:
    """Build one learner from ``cfg`` (seed 0), roll it out, update once; returns it and its losses (the state
    before the update in ``alg.before``)."""
    env = StandIn()
    obs = env.get_observations()
    torch.manual_seed(0)
    cfg = copy.deepcopy(cfg)
    if ours:
        cfg["algorithm"]["class_name"] = CLASS_PATH
        alg = DropIn.construct_algorithm(obs, env, cfg, "cpu")
    else:
        alg = RslPPO.construct_algorithm(obs, env, cfg, "cpu")
    data = torch.Generator().manual_seed(5)
    _rollout(alg, env, data)  # a first rollout leaves recurrent models a hidden state to start the second from
    alg.storage.clear()
    _rollout(alg, env, data)
    if mutate is not None:
        mutate(alg)
    alg.before = {k: v.clone() for k, v in _state(alg).items()}
    torch.manual_seed(PERMUTATION_SEED)
    return alg, alg.update()


def _state(alg: Any) -> dict[str, torch.Tensor]:
    out = {f"actor.{k}": v for k, v in alg.actor.state_dict().items()}
    out |= {f"critic.{k}": v for k, v in alg.critic.state_dict().items()}
    if getattr(alg, "rnd", None):
        out |= {f"rnd.{k}": v for k, v in alg.rnd.state_dict().items()}
    return out


def _assert_same(ours: Any, our_losses: dict, theirs: Any, their_losses: dict) -> None:
    assert our_losses.keys() == their_losses.keys()
    for key, value in our_losses.items():
        torch.testing.assert_close(torch.tensor(value), torch.tensor(their_losses[key]), atol=ATOL, rtol=0)
    torch.testing.assert_close(torch.tensor(ours.learning_rate), torch.tensor(theirs.learning_rate), atol=1e-8, rtol=0)
    mine, other = _state(ours), _state(theirs)
    assert mine.keys() == other.keys()
    for key, value in mine.items():
        torch.testing.assert_close(value.float(), other[key].float(), atol=ATOL, rtol=0, msg=f"{key} differs")


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_update_matches_rsl_rl(case: str) -> None:
    cfg = CASES[case]
    assert general_feature(cfg) is not None  # the case exercises the general learner, not the fast one
    ours, our_losses = _trained(cfg, ours=True)
    theirs, their_losses = _trained(cfg, ours=False)
    assert isinstance(ours, GeneralPPO) and type(theirs) is RslPPO
    assert any(not torch.equal(v, theirs.before[k]) for k, v in _state(theirs).items())  # the update moved weights
    _assert_same(ours, our_losses, theirs, their_losses)
    mutated, mutated_losses = _trained(cfg, ours=True, mutate=MUTANTS.get(case, _clip_more))
    with pytest.raises(AssertionError):
        _assert_same(mutated, mutated_losses, theirs, their_losses)


def test_symmetry_with_a_recurrent_policy_is_refused_as_rsl_rl_does() -> None:
    cfg = runner_cfg(actor=RNN, algorithm={"symmetry_cfg": {"use_mirror_loss": True, "data_augmentation_func": mirror}})
    cfg["algorithm"]["class_name"] = CLASS_PATH
    env = StandIn()
    with pytest.raises(UserError, match="Symmetry augmentation is not supported for recurrent policies"):
        DropIn.construct_algorithm(env.get_observations(), env, cfg, "cpu")


def test_an_unknown_optimizer_is_one_line_naming_the_valid_ones() -> None:
    cfg = runner_cfg(algorithm={"optimizer": "lamb"})
    cfg["algorithm"]["class_name"] = CLASS_PATH
    env = StandIn()
    with pytest.raises(UserError, match="optimizer: unknown 'lamb' \\(valid: adam, adamw, sgd, rmsprop\\)"):
        DropIn.construct_algorithm(env.get_observations(), env, cfg, "cpu")


def test_a_non_finite_loss_skips_the_step_on_the_device() -> None:
    """The NaN guard: a NaN reward makes every minibatch's loss NaN; no weight moves, the optimizer state stays."""
    cfg = copy.deepcopy(CASES["adamw"])
    cfg["algorithm"]["class_name"] = CLASS_PATH
    env = StandIn()
    torch.manual_seed(0)
    alg = DropIn.construct_algorithm(env.get_observations(), env, cfg, "cpu")
    _rollout(alg, env, torch.Generator().manual_seed(5))
    alg.storage.rewards[0, 0] = float("nan")
    alg.compute_returns(env.get_observations())
    before = {k: v.clone() for k, v in _state(alg).items()}
    alg.update()
    assert alg.last_skipped == 12  # 3 epochs x 4 minibatches
    after = _state(alg)
    assert all(torch.equal(before[k], after[k]) for k in before if "normalizer" not in k)


# rsl_rl's multi-GPU mode: two gloo ranks ----------------------------------------------------------------------------


def _rank(rank: int, port: int, out: str, case: str) -> None:
    """One rank: its own initial weights (seed = rank) and data; both learners under a gloo process group."""
    torch.set_num_threads(1)
    os.environ["LOCAL_WORLD_SIZE"] = "2"
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=60)
    )
    results = {}
    for ours in (True, False):
        cfg = copy.deepcopy(CASES.get(case, runner_cfg()))
        cfg["multi_gpu"] = {"global_rank": rank, "local_rank": rank, "world_size": 2}
        env = StandIn(seed=rank)
        torch.manual_seed(rank)  # different weights on each rank: broadcast_parameters must align them
        if ours:
            cfg["algorithm"]["class_name"] = CLASS_PATH
            alg = DropIn.construct_algorithm(env.get_observations(), env, cfg, "cpu")
        else:
            alg = RslPPO.construct_algorithm(env.get_observations(), env, cfg, "cpu")
        learner = getattr(alg, "learner", alg)
        before = {k: v.clone() for k, v in _state(learner).items()}
        alg.broadcast_parameters()
        _rollout(alg, env, torch.Generator().manual_seed(10 + rank))
        torch.manual_seed(PERMUTATION_SEED)
        if hasattr(learner, "generator"):
            learner.generator.manual_seed(PERMUTATION_SEED)
        losses = alg.update()
        results["ours" if ours else "rsl_rl"] = {
            "state": {k: v.clone() for k, v in _state(learner).items()},
            "losses": losses,
            "lr": float(alg.learning_rate),
            "before": before,
        }
    torch.save(results, Path(out) / f"rank{rank}.pt")
    dist.destroy_process_group()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("case", ["rnd", "plain"])
def test_two_gloo_ranks_end_identical_and_as_rsl_rl(case: str, tmp_path: Path) -> None:
    """``rnd``: the general learner (RND's predictor and target broadcast too) equals rsl_rl's multi-GPU PPO on the
    same two ranks. ``plain``: the fast learner's ranks end identical (its update is not rsl_rl's to the bit: value
    normalisation and its own minibatch partition; ``test_rsl_rl_equivalence`` covers that)."""
    mp.spawn(_rank, args=(_free_port(), str(tmp_path), case), nprocs=2, join=True)
    ranks = [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(2)]
    for key in ("ours", "rsl_rl"):
        a, b = (r[key]["state"] for r in ranks)
        assert all(torch.equal(a[k], b[k]) for k in a), f"{key}: the ranks hold different weights"
    # rsl_rl's models, built from the same seeds as ours (the fast learner aligns its own at construction already),
    # started different on the two ranks: the alignment above is the broadcast's doing
    a, b = (r["rsl_rl"]["before"] for r in ranks)
    assert any(not torch.equal(a[k], b[k]) for k in a)
    if case == "rnd":
        for r in ranks:
            mine, theirs = r["ours"], r["rsl_rl"]
            assert mine["losses"].keys() == theirs["losses"].keys()
            for k, v in mine["state"].items():
                torch.testing.assert_close(v.float(), theirs["state"][k].float(), atol=ATOL, rtol=0)
            assert abs(mine["lr"] - theirs["lr"]) < 1e-8


@pytest.mark.parametrize("case", ["gru", "cnn", "beta"])
def test_bf16_runs_the_bodies_in_bf16_and_the_heads_in_fp32(case: str) -> None:
    """rsl_rl's ``use_mixed_precision`` is redline's bf16 policy: the update runs (finite, weights move), the hidden
    layers compute in bf16 and the output head in fp32, and the learner's dict keeps fp32 master weights."""
    cfg = copy.deepcopy(CASES[case])
    cfg["algorithm"] |= {"class_name": CLASS_PATH, "use_mixed_precision": True}
    env = StandIn()
    torch.manual_seed(0)
    alg = DropIn.construct_algorithm(env.get_observations(), env, cfg, "cpu")
    assert alg.precision.is_bf16
    seen: dict[str, torch.dtype] = {}
    for name, layer in (("body", alg.actor.mlp[0]), ("head", alg.actor.mlp[-1])):
        layer.register_forward_hook(lambda m, i, o, name=name: seen.update({name: o.dtype}) and None)
    _rollout(alg, env, torch.Generator().manual_seed(5))
    before = {k: v.clone() for k, v in _state(alg).items()}
    seen.clear()
    losses = alg.update()
    assert seen == {"body": torch.bfloat16, "head": torch.float32}
    assert all(torch.isfinite(torch.tensor(v)) for v in losses.values()) and alg.last_skipped == 0
    assert any(not torch.equal(before[k], v) for k, v in _state(alg).items())
    assert all(p.dtype == torch.float32 for p in alg.actor.parameters())


def _built(cfg: dict[str, Any], ours: bool) -> Any:
    """A fresh learner of ``cfg`` (seed 0), before any rollout."""
    env = StandIn()
    cfg = copy.deepcopy(cfg)
    torch.manual_seed(0)
    if ours:
        cfg["algorithm"]["class_name"] = CLASS_PATH
        return DropIn.construct_algorithm(env.get_observations(), env, cfg, "cpu")
    return RslPPO.construct_algorithm(env.get_observations(), env, cfg, "cpu")


@pytest.mark.parametrize("case", ["rnd", "rnd_sgd"])
def test_a_checkpoint_loads_into_rsl_rls_ppo_and_back(case: str) -> None:
    """The drop-in's checkpoint has rsl_rl's keys, optimizers and float learning rates: rsl_rl's PPO loads it and
    trains on from it (as the drop-in does from the same checkpoint), and the drop-in loads it back with its device
    learning rate."""
    ours, _ = _trained(CASES[case], ours=True)
    saved = ours.save()
    assert all(isinstance(g["lr"], float) for g in saved["optimizer_state_dict"]["param_groups"])
    theirs = _built(CASES[case], ours=False)
    theirs.load(copy.deepcopy(saved), None, strict=True)  # a copy each: a loaded optimizer shares the dict's tensors
    assert theirs.learning_rate == pytest.approx(ours.learning_rate)
    for key, value in _state(ours).items():
        assert torch.equal(value, _state(theirs)[key]), key
    again = _built(CASES[case], ours=True)
    again.load(copy.deepcopy(saved), None, strict=True)
    lr = again.optimizer.param_groups[0]["lr"]
    assert lr is again._lr and again.learning_rate == pytest.approx(ours.learning_rate)
    trained_on = []
    for alg in (theirs, again):  # rsl_rl's optimizers step on the loaded state (an SGD state in an Adam: KeyError)
        _rollout(alg, StandIn(seed=3), torch.Generator().manual_seed(7))
        torch.manual_seed(PERMUTATION_SEED)
        trained_on.append(alg.update())
    _assert_same(again, trained_on[1], theirs, trained_on[0])
