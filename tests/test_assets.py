"""Offline assets: built from installed packages into a local folder laid out like Isaac Lab's asset root."""

from __future__ import annotations

from pathlib import Path

from pxr import Usd

from redline import assets


def test_assets_are_built_locally_with_stock_layout(tmp_path: Path) -> None:
    root = assets.ensure_asset_root(tmp_path / "root")
    for rel in (assets.CARTPOLE_REL, assets.ANT_REL, assets.GROUND_PLANE_REL):
        assert (root / rel).is_file(), rel
    cartpole = Usd.Stage.Open(str(root / assets.CARTPOLE_REL))
    assert cartpole.GetDefaultPrim().GetPath().pathString == "/cartpole"  # Newton's copy says "cartPole"
    joints = {p.GetName() for p in Usd.PrimRange(cartpole.GetDefaultPrim()) if p.GetTypeName().endswith("Joint")}
    assert {"slider_to_cart", "cart_to_pole"} <= joints
    ant = Usd.Stage.Open(str(root / assets.ANT_REL))
    ant_prims = {p.GetName() for p in Usd.PrimRange(ant.GetDefaultPrim())}
    assert {"front_left_foot", "right_back_foot"} <= ant_prims
    ground = Usd.Stage.Open(str(root / assets.GROUND_PLANE_REL))
    planes = [p for p in Usd.PrimRange(ground.GetDefaultPrim()) if p.GetTypeName() == "Plane"]
    assert len(planes) == 1 and "PhysicsCollisionAPI" in planes[0].GetAppliedSchemas()


def test_ensure_is_idempotent_and_repairs(tmp_path: Path) -> None:
    root = assets.ensure_asset_root(tmp_path)
    path = root / assets.CARTPOLE_REL
    mtime = path.stat().st_mtime_ns
    assets.ensure_asset_root(tmp_path)
    assert path.stat().st_mtime_ns == mtime  # unchanged content is not rewritten
    path.write_text("#usda 1.0\n")  # damaged
    assets.ensure_asset_root(tmp_path)
    assert 'defaultPrim = "cartpole"' in path.read_text()
    assert not list(root.rglob("*.tmp"))


def test_asset_root_follows_env_var(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(assets.ENV_VAR, str(tmp_path / "elsewhere"))
    assert assets.asset_path(assets.ANT_REL) == str(tmp_path / "elsewhere" / assets.ANT_REL)


def test_go1_is_local_and_is_the_converted_menagerie_model(tmp_path: Path) -> None:
    from redline.assets.mjcf_to_usd import convert

    root = assets.ensure_asset_root(tmp_path / "root")
    go1 = Usd.Stage.Open(str(root / assets.GO1_REL))
    prims = list(Usd.PrimRange(go1.GetDefaultPrim()))
    joints = sorted(p.GetName() for p in prims if p.GetTypeName() == "PhysicsRevoluteJoint")
    assert len(joints) == 12 and joints[0] == "FL_calf_joint"
    bodies = [p for p in prims if "PhysicsRigidBodyAPI" in p.GetAppliedSchemas()]
    assert len(bodies) == 13 and sum(p.GetAttribute("physics:mass").Get() for p in bodies) > 12.0  # [kg]
    assert not [p for p in prims if p.GetTypeName() == "Mesh"]  # collision primitives only
    data = Path(assets.__file__).with_name("data") / "unitree_go1"
    assert (data / "LICENSE").read_text().startswith("BSD 3-Clause License")
    # the shipped USD is what the converter makes of the MJCF (collision shapes at MuJoCo contact priority 1)
    convert(data / "go1.xml", tmp_path / "go1.usda", priority=1)
    assert (tmp_path / "go1.usda").read_text() == (data / "go1.usda").read_text()


def test_g1_is_local_and_is_the_converted_menagerie_model(tmp_path: Path) -> None:
    from redline.assets.mjcf_to_usd import convert

    root = assets.ensure_asset_root(tmp_path / "root")
    g1 = Usd.Stage.Open(str(root / assets.G1_REL))
    prims = list(Usd.PrimRange(g1.GetDefaultPrim()))
    joints = [p.GetName() for p in prims if p.GetTypeName() == "PhysicsRevoluteJoint"]
    assert len(joints) == 29 and not [j for j in joints if "hand" in j or "finger" in j]  # 29 dof, no hands
    bodies = [p for p in prims if "PhysicsRigidBodyAPI" in p.GetAppliedSchemas()]
    assert len(bodies) == 30 and 33.0 < sum(p.GetAttribute("physics:mass").Get() for p in bodies) < 34.0  # [kg]
    assert not [p for p in prims if p.GetTypeName() == "Mesh"]  # collision primitives only
    soles = [p for p in prims if p.GetName().startswith(("left_foot", "right_foot"))]
    assert len(soles) == 6 and all(p.GetTypeName() == "Capsule" for p in soles)
    data = Path(assets.__file__).with_name("data") / "unitree_g1"
    assert "BSD 3-Clause License" in (data / "LICENSE").read_text()
    convert(data / "g1.xml", tmp_path / "g1.usda", root_name="g1", priority=1)
    assert (tmp_path / "g1.usda").read_text() == (data / "g1.usda").read_text()
