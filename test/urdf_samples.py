"""URDF documents for the reader's tests: a small builder, and arms written as real descriptions are.

The "real-world" samples follow the shape of common arm descriptions as xacro expands
them (a ``world`` root, ``base_link``, meshes, collisions, transmissions, ``<gazebo>``
and ``<ros2_control>`` tags, frames rotated as their authors chose, ``tool0`` and
camera frames); they are written for these tests, not copied from any package.
"""

from __future__ import annotations

PI = "3.141592653589793"
HALF_PI = "1.5707963267948966"


def inertial(mass: float = 1.0, xyz: str = "0.1 0 0", izz: float = 0.01, rpy: str = "0 0 0") -> str:
    return (
        f'<inertial><origin xyz="{xyz}" rpy="{rpy}"/><mass value="{mass}"/>'
        f'<inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="{izz}"/></inertial>'
    )


def link(name: str, body: str = "") -> str:
    return f'<link name="{name}">{body}</link>'


def joint(
    name: str,
    kind: str,
    parent: str,
    child: str,
    xyz: str = "0 0 0",
    rpy: str = "0 0 0",
    axis: str = "0 0 1",
    extra: str = '<limit lower="-2" upper="2" effort="10" velocity="3"/>',
) -> str:
    return (
        f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>{extra}</joint>'
    )


def robot(*parts: str) -> str:
    return '<?xml version="1.0"?>\n<robot name="sample">' + "".join(parts) + "</robot>"


def two_link(**changes: dict[str, str]) -> str:
    """A planar two-link arm (base, j1 at x=0.2, link1 0.5 m, j2, link2 0.4 m, tip); ``changes`` edit one joint each.

    ``changes`` maps a joint name (``j1``, ``j2``, ``tip_joint``) to keyword arguments of :func:`joint`.
    """
    spec = {
        "j1": {"kind": "revolute", "parent": "base", "child": "link1", "xyz": "0.2 0 0"},
        "j2": {"kind": "revolute", "parent": "link1", "child": "link2", "xyz": "0.5 0 0"},
        "tip_joint": {"kind": "fixed", "parent": "link2", "child": "tip", "xyz": "0.4 0 0", "extra": ""},
    }
    for name, change in changes.items():
        spec[name] = {**spec[name], **change}
    return robot(
        link("base"),
        link("link1", inertial(2.0, "0.25 0.01 0", 0.05)),
        link("link2", inertial(1.0, "0.2 -0.02 0", 0.02)),
        link("tip"),
        *(joint(name, **fields) for name, fields in spec.items()),
    )


_TAGS = """
  <transmission name="{j}_trans">
    <type>transmission_interface/SimpleTransmission</type>
    <joint name="{j}"><hardwareInterface>hardware_interface/EffortJointInterface</hardwareInterface></joint>
    <actuator name="{j}_motor"><mechanicalReduction>1</mechanicalReduction></actuator>
  </transmission>"""


def _mesh_visual(mesh: str, xyz: str = "0 0 0", rpy: str = "0 0 0") -> str:
    return (
        f'<visual><origin xyz="{xyz}" rpy="{rpy}"/><geometry><mesh filename="package://sample_description/meshes/'
        f'{mesh}.dae"/></geometry><material name="grey"><color rgba="0.6 0.6 0.6 1"/></material></visual>'
        f'<collision><origin xyz="{xyz}" rpy="{rpy}"/><geometry><mesh filename="package://sample_description/'
        f'meshes/{mesh}.stl" scale="0.001 0.001 0.001"/></geometry></collision>'
    )


PLANAR_THREE_LINK = f"""<?xml version="1.0" encoding="utf-8"?>
<!-- Generated from planar_arm.urdf.xacro; frames as the manufacturer's CAD exports them -->
<robot name="planar_arm" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <link name="world"/>
  <joint name="world_to_base" type="fixed">
    <parent link="world"/>
    <child link="base_link"/>
    <origin xyz="0 0 0" rpy="0 0 0"/>
  </joint>
  <link name="base_link">
    <inertial>
      <origin xyz="0 0 0.05" rpy="0 0 0"/>
      <mass value="5.0"/>
      <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.03"/>
    </inertial>
    {_mesh_visual("base")}
  </link>
  <!-- joint 1 sits on the base, 0.12 m up; link1's frame is turned a quarter turn (its -y runs along the link) -->
  <joint name="shoulder" type="revolute">
    <parent link="base_link"/>
    <child link="upper_arm"/>
    <origin xyz="0.1 0 0.12" rpy="0 0 {HALF_PI}"/>
    <axis xyz="0 0 1"/>
    <limit lower="-2.9" upper="2.9" effort="40" velocity="2.5"/>
    <dynamics damping="0.1" friction="0.0"/>
  </joint>
  <link name="upper_arm">
    <inertial>
      <origin xyz="0 -0.2 0.03" rpy="0 0 0"/>
      <mass value="2.0"/>
      <inertia ixx="0.03" ixy="0.001" ixz="0.002" iyy="0.004" iyz="0" izz="0.05"/>
    </inertial>
    {_mesh_visual("upper_arm", rpy=f"0 0 -{HALF_PI}")}
  </link>
  <joint name="elbow" type="revolute">
    <parent link="upper_arm"/>
    <child link="forearm"/>
    <origin xyz="0 -0.4 0" rpy="0 0 -{HALF_PI}"/>
    <axis xyz="0 0 1"/>
    <limit lower="-2.5" upper="2.5" effort="20" velocity="3.0"/>
  </joint>
  <link name="forearm">
    <inertial>
      <origin xyz="0.15 0.01 0.02" rpy="0 0 0.3"/>
      <mass value="1.2"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/>
    </inertial>
    {_mesh_visual("forearm")}
  </link>
  <!-- the wrist turns without limit; its frame is flipped (roll pi), so its axis reads 0 0 -1 -->
  <joint name="wrist" type="continuous">
    <parent link="forearm"/>
    <child link="hand"/>
    <origin xyz="0.3 0 0" rpy="{PI} 0 0"/>
    <axis xyz="0 0 -1"/>
    <limit effort="5" velocity="6.0"/>
  </joint>
  <link name="hand">
    <inertial>
      <origin xyz="0.05 0.01 -0.01" rpy="0 0 0"/>
      <mass value="0.5"/>
      <inertia ixx="0.0005" ixy="0" ixz="0" iyy="0.003" iyz="0" izz="0.004"/>
    </inertial>
    {_mesh_visual("hand")}
  </link>
  <joint name="hand_to_flange" type="fixed">
    <parent link="hand"/>
    <child link="flange"/>
    <origin xyz="0.1 0 0" rpy="0 0 0"/>
  </joint>
  <link name="flange">
    <inertial>
      <origin xyz="0 0 0" rpy="0 0 0"/>
      <mass value="0.2"/>
      <inertia ixx="0.0001" ixy="0" ixz="0" iyy="0.0001" iyz="0" izz="0.0002"/>
    </inertial>
  </link>
  <joint name="flange_to_tool0" type="fixed">
    <parent link="flange"/>
    <child link="tool0"/>
    <origin xyz="0.02 0 0" rpy="0 {HALF_PI} 0"/>
  </joint>
  <link name="tool0"/>
  <!-- a camera bolted to the upper arm -->
  <joint name="camera_mount" type="fixed">
    <parent link="upper_arm"/>
    <child link="camera_link"/>
    <origin xyz="0 -0.1 0.05" rpy="0 0 0"/>
  </joint>
  <link name="camera_link">
    <inertial>
      <origin xyz="0.01 0 0" rpy="0 0 0"/>
      <mass value="0.1"/>
      <inertia ixx="0.00001" ixy="0" ixz="0" iyy="0.00001" iyz="0" izz="0.00002"/>
    </inertial>
  </link>
  <joint name="camera_optical_joint" type="fixed">
    <parent link="camera_link"/>
    <child link="camera_optical_frame"/>
    <origin xyz="0 0 0" rpy="-{HALF_PI} 0 -{HALF_PI}"/>
  </joint>
  <link name="camera_optical_frame"/>
  {_TAGS.format(j="shoulder")}{_TAGS.format(j="elbow")}{_TAGS.format(j="wrist")}
  <gazebo reference="upper_arm"><material>Gazebo/Orange</material></gazebo>
  <gazebo><plugin filename="libgazebo_ros2_control.so" name="gazebo_ros2_control">
    <parameters>$(find sample_bringup)/config/controllers.yaml</parameters></plugin></gazebo>
  <ros2_control name="PlanarArm" type="system">
    <hardware><plugin>sample_hardware/PlanarArmSystem</plugin></hardware>
    <joint name="shoulder"><command_interface name="effort"/><state_interface name="position"/></joint>
    <joint name="elbow"><command_interface name="effort"/><state_interface name="position"/></joint>
    <joint name="wrist"><command_interface name="effort"/><state_interface name="position"/></joint>
  </ros2_control>
</robot>
"""
"""A planar three-joint arm with rotated frames, a flipped wrist, fixed flange, tool0 and a camera.

At zero angles (world axes): shoulder at (0.1, 0, 0.12), elbow 0.4 m further along x, wrist 0.3 m,
tool0 0.12 m (hand 0.1 + flange 0.02)."""

# ros2_control_demos-style "RRBot": two links turning about y, in the x-z plane (a vertical arm).
RRBOT = robot(
    link("world"),
    joint("fixed", "fixed", "world", "base_link", extra=""),
    link("base_link", inertial(1.0, "0 0 1", 1.0)),
    joint("joint1", "continuous", "base_link", "link1", "0 0.1 1.95", axis="0 1 0", extra=""),
    link("link1", inertial(1.0, "0 0 0.45", 1.0)),
    joint("joint2", "continuous", "link1", "link2", "0 0.1 0.9", axis="0 1 0", extra=""),
    link("link2", inertial(1.0, "0 0 0.45", 1.0)),
    joint("tool_joint", "fixed", "link2", "tool_link", "0 0 1", extra=""),
    link("tool_link"),
)

# A UR-style six-axis arm, first three joints: the shoulder lift's frame is rolled a quarter turn.
UR_LIKE = robot(
    link("world"),
    link("base_link_inertia", inertial(4.0, "0 0 0", 0.0061)),
    joint("base_joint", "fixed", "world", "base_link_inertia", rpy=f"0 0 {PI}", extra=""),
    joint("shoulder_pan_joint", "revolute", "base_link_inertia", "shoulder_link", "0 0 0.1625"),
    link("shoulder_link", inertial(3.7, "0 0 0", 0.0067)),
    joint("shoulder_lift_joint", "revolute", "shoulder_link", "upper_arm_link", rpy=f"{HALF_PI} 0 0"),
    link("upper_arm_link", inertial(8.39, "-0.2125 0 0.138", 0.0151)),
    joint("elbow_joint", "revolute", "upper_arm_link", "forearm_link", "-0.425 0 0"),
    link("forearm_link", inertial(2.33, "-0.196 0 0.007", 0.0041)),
)

# A two-link SCARA: the forearm rides 0.05 m above the upper arm.
SCARA = robot(
    link("base_link"),
    joint("j1", "revolute", "base_link", "arm1", "0 0 0.3"),
    link("arm1", inertial(3.0, "0.2 0 0", 0.04)),
    joint("j2", "revolute", "arm1", "arm2", "0.35 0 0.05"),
    link("arm2", inertial(2.0, "0.15 0 0", 0.02)),
    joint("j3_flange", "fixed", "arm2", "flange", "0.3 0 0", extra=""),
    link("flange"),
)

# A planar arm carrying a parallel gripper with two sliding fingers.
WITH_GRIPPER = robot(
    link("base_link"),
    joint("j1", "revolute", "base_link", "arm1"),
    link("arm1", inertial(2.0, "0.2 0 0", 0.04)),
    joint("j2", "revolute", "arm1", "arm2", "0.4 0 0"),
    link("arm2", inertial(1.0, "0.15 0 0", 0.02)),
    joint("gripper_mount", "fixed", "arm2", "gripper", "0.3 0 0", extra=""),
    link("gripper", inertial(0.3, "0.03 0 0", 0.001)),
    joint(
        "left_finger_joint",
        "prismatic",
        "gripper",
        "left_finger",
        "0.05 0.02 0",
        axis="0 1 0",
        extra='<limit lower="0" upper="0.04" effort="20" velocity="0.2"/>',
    ),
    link("left_finger", inertial(0.05, "0.01 0 0", 0.0001)),
    joint(
        "right_finger_joint",
        "prismatic",
        "gripper",
        "right_finger",
        "0.05 -0.02 0",
        axis="0 -1 0",
        extra='<limit lower="0" upper="0.04" effort="20" velocity="0.2"/><mimic joint="left_finger_joint"/>',
    ),
    link("right_finger", inertial(0.05, "0.01 0 0", 0.0001)),
)

# A planar arm on a mobile base (odom -> base_footprint is a planar joint).
ON_MOBILE_BASE = robot(
    link("odom"),
    joint("base_joint", "planar", "odom", "base_footprint", axis="0 0 1", extra=""),
    link("base_footprint", inertial(20.0, "0 0 0.1", 1.0)),
    joint("j1", "revolute", "base_footprint", "arm1", "0.2 0 0.4"),
    link("arm1", inertial(2.0, "0.2 0 0", 0.04)),
)
