"""The device is decided once, in :mod:`redline.device`: its rules on machines with 0, 1 and 2 GPUs (torch's answer
replaced), the launchers reading them, and a static check that no other module asks torch which device to use (nor
reads rsl_rl's ``use_mixed_precision`` outside :mod:`redline.learning.precision`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import redline
from redline import device
from redline.commands import process_group, spawn
from redline.errors import UserError

SOURCE = Path(redline.__file__).parent


@pytest.fixture
def gpus(monkeypatch: pytest.MonkeyPatch):
    """``gpus(n)``: this test's machine has ``n`` CUDA GPUs, as far as redline asks."""
    return lambda n: monkeypatch.setattr(device, "cuda_count", lambda: n)


@pytest.mark.parametrize(("count", "expected"), [(0, "cpu"), (1, "cuda:0"), (2, "cuda:0")])
def test_the_default_is_the_first_gpu_else_the_cpu(gpus, count: int, expected: str) -> None:
    gpus(count)
    assert device.default_device() == expected
    assert device.resolve_device(None) == expected


@pytest.mark.parametrize(
    ("requested", "count", "expected"),
    [
        ("cpu", 0, "cpu"),
        ("cpu", 2, "cpu"),
        ("cuda", 2, "cuda:0"),
        ("cuda:1", 2, "cuda:1"),
        ("tpu", 2, "--device: unknown device 'tpu' (valid: cpu, cuda, cuda:N)"),
        ("cuda", 0, "--device: 'cuda' requested but no CUDA GPU is available (valid here: cpu)"),
        ("cuda:2", 2, "--device: 'cuda:2' does not exist (valid: cpu, cuda:0 .. cuda:1)"),
    ],
)
def test_a_requested_device_is_checked_against_this_machine(gpus, requested: str, count: int, expected: str) -> None:
    gpus(count)
    if expected.startswith("--"):
        with pytest.raises(UserError) as error:
            device.resolve_device(requested)
        assert str(error.value) == expected
    else:
        assert device.resolve_device(requested) == expected


@pytest.mark.parametrize(
    ("requested", "local_rank", "count", "expected"),
    [
        (None, 1, 2, "cuda:1"),
        ("cuda:0", 1, 2, "cuda:1"),  # each process its own GPU, whichever index was asked for
        ("cpu", 1, 2, "cpu"),
        (None, 1, 0, "cpu"),
        ("cuda", 0, 0, "--device: 'cuda' requested but no CUDA GPU is available (valid here: cpu)"),
        (None, 2, 2, "--nproc: local rank 2 but only 2 CUDA GPU(s)"),
    ],
)
def test_each_process_of_a_multi_process_run_has_its_own_gpu_or_the_cpu(
    gpus, requested: str | None, local_rank: int, count: int, expected: str
) -> None:
    gpus(count)
    assert device.gpus_for(requested) == (0 if requested == "cpu" else count)
    if expected.startswith("--"):
        with pytest.raises(UserError) as error:
            device.rank_device(requested, local_rank)
        assert str(error.value) == expected
    else:
        assert device.rank_device(requested, local_rank) == expected


@pytest.mark.parametrize(
    ("config", "count", "expected"), [("cuda:0", 0, "cpu"), ("cuda:0", 1, "cuda:0"), ("cpu", 0, "cpu")]
)
def test_an_agent_configs_cuda_device_runs_on_the_cpu_where_there_is_no_gpu(
    gpus, config: str, count: int, expected: str
) -> None:
    gpus(count)
    assert device.runnable_here(config) == expected


def test_the_launcher_counts_the_gpus_device_py_counts(gpus) -> None:
    """``--nproc`` over the GPUs fails before torchrun starts, with the count :func:`redline.device.cuda_count` gave."""
    gpus(1)
    with pytest.raises(UserError, match=r"--nproc: 2 processes but 1 CUDA GPU\(s\); use --nproc <= 1 or --device cpu"):
        spawn.run_torchrun(2, ["train", "--task=T", "--distributed"], None)


def test_a_torchrun_worker_asking_for_cuda_without_it_fails_in_device_pys_words(
    gpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    gpus(0)
    for name, value in zip(process_group.TORCHRUN_ENV, ("0", "1", "0", "127.0.0.1", "1"), strict=True):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    with pytest.raises(UserError) as error:
        process_group.init("cuda", 5.0)  # refused before any rendezvous
    assert str(error.value) == "--device: 'cuda' requested but no CUDA GPU is available (valid here: cpu)"


# the static check -----------------------------------------------------------------------------------------------------

CUDA_QUERIES = ("is_available", "device_count")
"""torch.cuda's answers a device decision is made from."""

NOT_A_DECISION = {
    ("learning/capture.py", "GraphReplay._run"): "may the capture API be called (CUDA present)",
    ("learning/capture.py", "GraphReplay.__call__"): "may the capture API be called (CUDA present)",
    ("learning/precision.py", "bf16_supported"): "may the device's capability be asked for",
    ("run_state/generators.py", "capture_generators"): "are there CUDA generators to save",
    ("run_state/generators.py", "restore_generators"): "do the saved CUDA generators fit this machine",
    ("telemetry/gpu_monitor.py", "nvml_sampler"): "is there a GPU to sample",
    # to follow: `redline bench gpu`'s default device ("cuda", not device.py's "cuda:0": its records name it); the
    # GPU check's driver left the package for tools/gpu/ (issue 47 item 2)
    ("bench/gpu.py", "run"): "bench gpu's default device (to move to device.default_device)",
}
"""Where a module other than :mod:`redline.device` may ask torch.cuda: (file, function) -> the question it asks,
which is whether a CUDA API may be called, not which device a run uses."""


def _scopes(tree: ast.AST) -> list[tuple[str, ast.AST]]:
    """Every node of ``tree`` with the dotted name of the function or class it stands in (``""``: the module)."""
    found: list[tuple[str, ast.AST]] = []

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = f"{scope}.{child.name}" if scope else child.name
            found.append((inner, child))
            visit(child, inner)

    visit(tree, "")
    return found


def _device_decisions(path: Path, root: Path = SOURCE) -> set[tuple[str, str]]:
    """``(file under root, function)`` of each ``torch.cuda.is_available()`` / ``device_count()`` call in ``path`` and
    of each device string built as ``f"cuda:{...}"``."""
    relative = path.relative_to(root).as_posix()
    found = set()
    for scope, node in _scopes(ast.parse(path.read_text(), filename=str(path))):
        asks = (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in CUDA_QUERIES
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "cuda"
        )
        builds = (
            isinstance(node, ast.JoinedStr)
            and bool(node.values)
            and isinstance(node.values[0], ast.Constant)
            and str(node.values[0].value).startswith("cuda:")
        )
        if asks or builds:
            found.add((relative, scope))
    return found


def test_only_device_py_decides_the_device() -> None:
    """A command, launcher or config that asks torch.cuda for itself, or writes ``cuda:{n}`` itself, decides the
    device a second time (``process_group`` once had its own check and its own "CUDA is not available" message)."""
    decisions: set[tuple[str, str]] = set()
    for path in sorted(SOURCE.rglob("*.py")):
        if path != SOURCE / "device.py":
            decisions |= _device_decisions(path)
    assert sorted(decisions - NOT_A_DECISION.keys()) == []


def test_the_static_check_sees_a_planted_decision(tmp_path: Path) -> None:
    """The check fails on the regression it guards against: process_group's old lines, planted back."""
    planted = tmp_path / "commands" / "planted.py"
    planted.parent.mkdir()
    planted.write_text(
        "import torch\n\n"
        "def init(device, local):\n"
        "    use_cuda = device.startswith('cuda') and torch.cuda.is_available()\n"
        "    return f'cuda:{local}' if use_cuda else 'cpu'\n"
    )
    assert _device_decisions(planted, tmp_path) == {("commands/planted.py", "init")}


def _branches_on_mixed_precision(path: Path) -> list[int]:
    """Lines of ``path`` where an ``if``, a conditional expression or a boolean operation tests rsl_rl's
    ``use_mixed_precision``."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        tests = [node.test] if isinstance(node, ast.If | ast.IfExp | ast.While) else []
        tests += node.values if isinstance(node, ast.BoolOp) else []
        for test in tests:
            for part in ast.walk(test):
                name = (
                    part.value
                    if isinstance(part, ast.Constant)
                    else part.attr
                    if isinstance(part, ast.Attribute)
                    else part.id
                    if isinstance(part, ast.Name)
                    else None
                )
                if name == "use_mixed_precision":
                    lines.append(part.lineno)
    return lines


def test_only_the_precision_module_reads_use_mixed_precision() -> None:
    """Both readings of rsl_rl's flag (the drop-in's, False is fp32; ``redline train``'s, False is the config's own)
    are :func:`redline.learning.precision.requested_precision`'s: no other module branches on it."""
    branching = {
        f"{path.relative_to(SOURCE)}:{line}"
        for path in SOURCE.rglob("*.py")
        if path != SOURCE / "learning" / "precision.py"
        for line in _branches_on_mixed_precision(path)
    }
    assert sorted(branching) == []


def test_the_precision_check_sees_a_planted_reading(tmp_path: Path) -> None:
    """The check fails on the regression it guards against: the learner config's old lines, planted back."""
    planted = tmp_path / "planted.py"
    planted.write_text(
        "def precision(alg, explicit):\n"
        "    if explicit is not None:\n"
        "        return explicit\n"
        "    elif alg.get('use_mixed_precision'):\n"
        "        return 'bf16'\n"
        "    return 'auto'\n"
    )
    assert _branches_on_mixed_precision(planted) == [4]
