"""Convert a MuJoCo (MJCF) legged robot into a USD articulation that Isaac Lab loads kit-less on Newton.

The robot is compiled with MuJoCo (which resolves default classes, ``fromto`` capsules and inertial frames), then
written with ``pxr`` as Newton's own USD robots are laid out: one ``Xform`` with ``PhysicsArticulationRootAPI``
holding every rigid body as a flat child (``PhysicsRigidBodyAPI`` + ``PhysicsMassAPI`` with the MJCF's mass, centre
of mass and principal inertia) and a ``joints`` scope of ``PhysicsRevoluteJoint`` prims (limits, an angular drive
for Isaac Lab's actuators to set). Collision geometry is kept (boxes, spheres, capsules); visual meshes are dropped
(``contype == conaffinity == 0``), so the file has no mesh data. The floating base is the body without a joint.

Used once to produce the USD files shipped in ``redline/assets/data``::

    python -m redline.assets.mjcf_to_usd robot.xml robot.usda --priority 1 [--root_name g1]

``--priority`` writes MuJoCo's contact priority (``mjc:priority``, which Newton passes to ``geom_priority``) on every
collision shape. MuJoCo combines two geoms' frictions by taking the larger, unless one geom has the higher priority,
whose friction is then used alone; Isaac Lab's terrain asks for PhysX's ``multiply`` with a ground friction of 1.0,
whose product is the robot's own friction. A robot priority above the ground's 0 gives exactly that, so a
friction randomisation of the robot's shapes takes effect on both MuJoCo engines (with the larger-of-two rule the
ground's 1.0 would win every contact).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import mujoco
import numpy as np

_CAPSULE = mujoco.mjtGeom.mjGEOM_CAPSULE
_SPHERE = mujoco.mjtGeom.mjGEOM_SPHERE
_BOX = mujoco.mjtGeom.mjGEOM_BOX
_AXES: dict[tuple[float, ...], str] = {(1.0, 0.0, 0.0): "X", (0.0, 1.0, 0.0): "Y", (0.0, 0.0, 1.0): "Z"}


def _collision_model(xml_path: Path) -> mujoco.MjModel:
    """The MJCF compiled without its visual geoms and meshes (no mesh file is read)."""
    spec = mujoco.MjSpec.from_file(str(xml_path))
    for geom in list(spec.geoms):
        if geom.contype == 0 and geom.conaffinity == 0:
            spec.delete(geom)
    for mesh in list(spec.meshes):
        spec.delete(mesh)
    for light in list(spec.lights):
        spec.delete(light)
    return spec.compile()


def _quat(q: np.ndarray):
    # heavy: USD (pxr), only to convert a model
    from pxr import Gf

    return Gf.Quatf(float(q[0]), Gf.Vec3f(float(q[1]), float(q[2]), float(q[3])))


def _vec(v: np.ndarray):
    # heavy: USD (pxr), only to convert a model
    from pxr import Gf

    return Gf.Vec3f(*(float(x) for x in v))


def _set_pose(xformable, pos: np.ndarray, quat: np.ndarray) -> None:
    # heavy: USD (pxr), only to convert a model
    from pxr import Gf, UsdGeom

    xf = UsdGeom.Xformable(xformable)
    xf.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(*(float(x) for x in pos)))
    xf.AddOrientOp(UsdGeom.XformOp.PrecisionFloat).Set(_quat(quat))


def _relative(pos_a, quat_a, pos_b, quat_b) -> tuple[np.ndarray, np.ndarray]:
    """Pose of frame b in frame a (both given in the world): ``a^-1 * b``."""
    inv = np.zeros(4)
    mujoco.mju_negQuat(inv, quat_a)
    pos = np.zeros(3)
    mujoco.mju_rotVecQuat(pos, pos_b - pos_a, inv)
    quat = np.zeros(4)
    mujoco.mju_mulQuat(quat, inv, quat_b)
    return pos, quat


def convert(xml_path: str | Path, usd_path: str | Path, root_name: str | None = None, priority: int = 0) -> None:
    """Write ``usd_path`` (``.usda`` or ``.usdc``) from the MJCF at ``xml_path``.

    Body poses are taken at the MJCF's ``qpos0`` relative to the floating base, so the base sits at the origin of
    the root prim and Isaac Lab's ``init_state`` places it. Joint limits are written in degrees (USD's unit for
    revolute joints); lengths in metres, masses in kilograms.
    """
    # heavy: USD (pxr), only to convert a model
    from pxr import Sdf, Usd, UsdGeom, UsdPhysics

    model = _collision_model(Path(xml_path))
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    name = root_name or model.names[: model.names.index(b"\0")].decode() or "robot"
    if not Sdf.Path.IsValidIdentifier(name):
        raise ValueError(f"root prim name {name!r} (the MJCF's model name) is not a USD identifier; pass --root_name")
    stage = Usd.Stage.CreateNew(str(usd_path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    root = UsdGeom.Xform.Define(stage, f"/{name}")
    stage.SetDefaultPrim(root.GetPrim())
    UsdPhysics.ArticulationRootAPI.Apply(root.GetPrim())

    base = 1  # MuJoCo's body 0 is the world
    base_pos, base_quat = data.xpos[base].copy(), data.xquat[base].copy()
    paths: dict[int, str] = {}
    for b in range(1, model.nbody):
        body_name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b)
        path = f"/{name}/{body_name}"
        paths[b] = path
        prim = UsdGeom.Xform.Define(stage, path)
        _set_pose(prim, *_relative(base_pos, base_quat, data.xpos[b], data.xquat[b]))
        UsdPhysics.RigidBodyAPI.Apply(prim.GetPrim())
        mass = UsdPhysics.MassAPI.Apply(prim.GetPrim())
        mass.CreateMassAttr(float(model.body_mass[b]))  # [kg]
        mass.CreateCenterOfMassAttr(_vec(model.body_ipos[b]))  # [m], body frame
        mass.CreateDiagonalInertiaAttr(_vec(model.body_inertia[b]))  # [kg m^2], principal axes
        mass.CreatePrincipalAxesAttr(_quat(model.body_iquat[b]))
        for g in range(model.body_geomadr[b], model.body_geomadr[b] + model.body_geomnum[b]):
            _add_shape(stage, model, g, f"{path}/collisions", priority)

    stage.DefinePrim(f"/{name}/joints", "Scope")
    for j in range(model.njnt):
        if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            continue
        if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE:
            raise ValueError(f"joint {j}: only hinge joints are supported")
        child = int(model.jnt_bodyid[j])
        parent = int(model.body_parentid[child])
        axis = _AXES.get(tuple(float(x) for x in model.jnt_axis[j]))
        if axis is None:
            raise ValueError(f"joint {j}: axis {model.jnt_axis[j]} is not a coordinate axis")
        joint_name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j)
        joint = UsdPhysics.RevoluteJoint.Define(stage, f"/{name}/joints/{joint_name}")
        joint.CreateBody0Rel().SetTargets([Sdf.Path(paths[parent])])
        joint.CreateBody1Rel().SetTargets([Sdf.Path(paths[child])])
        anchor = model.jnt_pos[j]  # [m] in the child's frame
        rel_pos, rel_quat = _relative(data.xpos[parent], data.xquat[parent], data.xpos[child], data.xquat[child])
        pos0 = np.zeros(3)
        mujoco.mju_rotVecQuat(pos0, anchor, rel_quat)
        joint.CreateLocalPos0Attr(_vec(rel_pos + pos0))
        joint.CreateLocalRot0Attr(_quat(rel_quat))
        joint.CreateLocalPos1Attr(_vec(anchor))
        joint.CreateLocalRot1Attr(_quat(np.array([1.0, 0.0, 0.0, 0.0])))
        joint.CreateAxisAttr(axis)
        if model.jnt_limited[j]:
            low, high = (math.degrees(float(x)) for x in model.jnt_range[j])
            joint.CreateLowerLimitAttr(low)  # [deg]
            joint.CreateUpperLimitAttr(high)  # [deg]
        drive = UsdPhysics.DriveAPI.Apply(joint.GetPrim(), "angular")
        drive.CreateTypeAttr("force")
        drive.CreateStiffnessAttr(0.0)  # Isaac Lab's actuator config sets the gains
        drive.CreateDampingAttr(0.0)
    stage.GetRootLayer().Save()


def _add_shape(stage, model: mujoco.MjModel, g: int, parent: str, priority: int = 0) -> None:
    # heavy: USD (pxr), only to convert a model
    from pxr import Sdf, UsdGeom, UsdPhysics

    geom_name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom_{g}"
    path = f"{parent}/{geom_name}"
    size = model.geom_size[g]
    kind = model.geom_type[g]
    if kind == _BOX:
        shape = UsdGeom.Cube.Define(stage, path)
        shape.CreateSizeAttr(1.0)
        _set_pose(shape, model.geom_pos[g], model.geom_quat[g])
        shape.AddScaleOp().Set(_vec(2.0 * size))  # [m] full edge lengths
    elif kind == _SPHERE:
        shape = UsdGeom.Sphere.Define(stage, path)
        shape.CreateRadiusAttr(float(size[0]))
        _set_pose(shape, model.geom_pos[g], model.geom_quat[g])
    elif kind == _CAPSULE:
        shape = UsdGeom.Capsule.Define(stage, path)
        shape.CreateAxisAttr("Z")  # MuJoCo capsules lie along the geom's z axis
        shape.CreateRadiusAttr(float(size[0]))
        shape.CreateHeightAttr(float(2.0 * size[1]))  # [m] length of the cylinder part
        _set_pose(shape, model.geom_pos[g], model.geom_quat[g])
    else:
        raise ValueError(f"geom '{geom_name}': type {kind} is not supported (box, sphere, capsule)")
    shape.CreatePurposeAttr(UsdGeom.Tokens.guide)
    UsdPhysics.CollisionAPI.Apply(shape.GetPrim())
    if priority:
        shape.GetPrim().CreateAttribute("mjc:priority", Sdf.ValueTypeNames.Int).Set(priority)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("xml", type=Path)
    parser.add_argument("usd", type=Path)
    parser.add_argument("--root_name", default=None)
    parser.add_argument("--priority", type=int, default=0, help="MuJoCo contact priority of the collision shapes")
    args = parser.parse_args(argv)
    convert(args.xml, args.usd, args.root_name, args.priority)


if __name__ == "__main__":
    main()
