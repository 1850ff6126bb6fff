"""`purejit.scipy.spatial.transform`, as `jax.scipy.spatial.transform`: `Rotation` (3-d
rotations stored as unit quaternions, scalar last) and `Slerp` (spherical linear
interpolation between key rotations).

Both are NamedTuples, hence pytrees: they pass into and out of jitted functions. Every
conversion works on one rotation (`quat` of shape (4,)) and is vectorised over leading axes
with `purejit.numpy.vectorize`, with JAX's formulas (SciPy's algorithms), so results match
JAX's bit for bit where XLA compiles the same operations the same way. Static choices
(`degrees`, `inverse`, the axis sequence) are Python branches where JAX selects with
`where`; the selected values are the same.
"""

from __future__ import annotations

import functools
import re
import typing

import numpy as np

from purejit import numpy as jnp
from purejit import random as prandom

__all__ = ["Rotation", "Slerp"]


def _vectorized(signature: str):
    return functools.partial(jnp.vectorize, signature=signature)


def _check_seq(seq: str, lengths: range) -> bool:
    """Validate an Euler axis sequence; True when it is intrinsic (upper case)."""
    if len(seq) not in lengths:
        raise ValueError(f"Expected axis specification to be a non-empty string of upto 3 "
                         f"characters, got {seq}")  # fmt: skip
    intrinsic = re.match(r"^[XYZ]{1,3}$", seq) is not None
    extrinsic = re.match(r"^[xyz]{1,3}$", seq) is not None
    if not (intrinsic or extrinsic):
        raise ValueError(f"Expected axes from `seq` to be from ['x', 'y', 'z'] or "
                         f"['X', 'Y', 'Z'], got {seq}")  # fmt: skip
    if any(seq[i] == seq[i + 1] for i in range(len(seq) - 1)):
        raise ValueError(f"Expected consecutive axes to be different, got {seq}")
    return intrinsic


def _axis_index(axis: str) -> int:
    if axis not in "xyz" or len(axis) != 1:
        raise ValueError(f"Expected axis to be from ['x', 'y', 'z'], got {axis}")
    return "xyz".index(axis)


class Rotation(typing.NamedTuple):
    """Rotations in 3 dimensions, as `jax.scipy.spatial.transform.Rotation` (SciPy's
    `Rotation` on purejit arrays).

    `quat` holds unit quaternions `(x, y, z, w)`: shape (4,) for one rotation, (N, 4) for N.
    Make one with a `from_*` class method, convert with `as_*`, compose with `*`.

    Example:
        >>> r = Rotation.from_euler('z', 90, degrees=True)
        >>> r.as_rotvec()  # [0, 0, pi/2]
    """

    quat: typing.Any

    @classmethod
    def concatenate(cls, rotations: typing.Sequence):
        """The rotations of a sequence of `Rotation` objects (each holding N of them), in
        one."""
        return cls(jnp.concatenate([rotation.quat for rotation in rotations]))

    @classmethod
    def from_euler(cls, seq: str, angles, degrees: bool = False):
        """From Euler angles about the axes of `seq`: 1 to 3 of 'xyz' (extrinsic, fixed
        axes) or 'XYZ' (intrinsic, rotating axes); `angles` has shape (..., len(seq))."""
        intrinsic = _check_seq(seq, range(1, 4))
        angles = jnp.atleast_1d(angles)
        if angles.shape[-1] != len(seq):
            raise ValueError(f"from_euler: angles of shape {angles.shape} for {len(seq)} axes "
                             f"{seq!r}; the last axis must have length {len(seq)}")  # fmt: skip
        axes = tuple(_axis_index(a) for a in seq.lower())
        return cls(_elementary_quat_compose(angles, axes, intrinsic, degrees))

    @classmethod
    def from_matrix(cls, matrix):
        """From rotation matrices of shape (..., 3, 3)."""
        return cls(_from_matrix(matrix))

    @classmethod
    def from_mrp(cls, mrp):
        """From Modified Rodrigues Parameters of shape (..., 3)."""
        return cls(_from_mrp(mrp))

    @classmethod
    def from_quat(cls, quat):
        """From quaternions `(x, y, z, w)` of shape (..., 4) (normalised here)."""
        return cls(_normalize_quaternion(quat))

    @classmethod
    def from_rotvec(cls, rotvec, degrees: bool = False):
        """From rotation vectors (axis times angle) of shape (..., 3)."""
        return cls(_from_rotvec(rotvec, degrees))

    @classmethod
    def identity(cls, num: int | None = None, dtype=float):
        """The identity rotation (one when `num` is None, else `num` of them)."""
        quat = jnp.array([0.0, 0.0, 0.0, 1.0], dtype=dtype)
        if num is not None:
            quat = jnp.tile(quat, (num, 1))
        return cls(quat)

    @classmethod
    def random(cls, random_key, num: int | None = None):
        """Rotations drawn uniformly from SO(3) (SciPy's method: normalised standard normal
        4-vectors are uniform on the unit quaternion sphere). JAX's raises
        NotImplementedError.

        Args:
            random_key: a `purejit.random` key.
            num: how many rotations (one when None).
        """
        shape = (4,) if num is None else (num, 4)
        return cls.from_quat(prandom.normal(random_key, shape))

    def __getitem__(self, indexer):
        """The rotation(s) at `indexer` (a Rotation holding several)."""
        if self.single:
            raise TypeError("Single rotation is not subscriptable.")
        return Rotation(self.quat[indexer])

    def __len__(self):
        """The number of rotations held (a TypeError for a single rotation)."""
        if self.single:
            raise TypeError("Single rotation has no len().")
        return self.quat.shape[0]

    def __mul__(self, other) -> Rotation:
        """`self * other`: apply `other` first, then `self`."""
        return Rotation.from_quat(_compose_quat(self.quat, other.quat))

    def apply(self, vectors, inverse: bool = False):
        """Rotate `vectors` of shape (..., 3) (by the inverse rotation if `inverse`)."""
        return _apply(self.as_matrix(), vectors, inverse)

    def as_euler(self, seq: str, degrees: bool = False):
        """Euler angles about the 3 axes of `seq` ('xyz'-style extrinsic or 'XYZ'-style
        intrinsic), in (-pi, pi]; shape (..., 3)."""
        if len(seq) != 3:
            raise ValueError(f"Expected 3 axes, got {seq}.")
        extrinsic = not _check_seq(seq, range(3, 4))
        axes = tuple(_axis_index(a) for a in seq.lower())
        return _compute_euler_from_quat(self.quat, axes, extrinsic, degrees)

    def as_matrix(self):
        """Rotation matrices, shape (..., 3, 3)."""
        return _as_matrix(self.quat)

    def as_mrp(self):
        """Modified Rodrigues Parameters, shape (..., 3)."""
        return _as_mrp(self.quat)

    def as_rotvec(self, degrees: bool = False):
        """Rotation vectors (axis times angle, angle in [0, pi]), shape (..., 3)."""
        return _as_rotvec(self.quat, degrees)

    def as_quat(self, canonical: bool = False, scalar_first: bool = False):
        """Quaternions `(x, y, z, w)`, or `(w, x, y, z)` if `scalar_first`; `canonical`
        picks the sign with w > 0 (ties broken by x, then y, then z)."""
        quat = _make_canonical(self.quat) if canonical else self.quat
        if scalar_first:
            return jnp.roll(quat, shift=1, axis=-1)
        return quat

    def inv(self):
        """The inverse rotation(s)."""
        return Rotation(_inv(self.quat))

    def magnitude(self):
        """The rotation angle(s), in [0, pi]."""
        return _magnitude(self.quat)

    def mean(self, weights=None):
        """The (weighted) mean rotation: the eigenvector of the largest eigenvalue of
        `sum_i w_i q_i q_i^T` (Markley et al.)."""
        dtype = self.quat.dtype
        if weights is None:
            w = jnp.ones(self.quat.shape[0], dtype=dtype)
        else:
            w = jnp.asarray(weights, dtype=dtype)
        if w.ndim != 1:
            raise ValueError(f"Expected `weights` to be 1 dimensional, got shape {w.shape}.")
        if w.shape[0] != len(self):
            raise ValueError(f"Expected `weights` to have number of values equal to number of "
                             f"rotations, got {w.shape[0]} values and {len(self)} "
                             "rotations.")  # fmt: skip
        K = jnp.dot(w[np.newaxis, :] * self.quat.T, self.quat)
        _, v = jnp.linalg.eigh(K)
        return Rotation(v[:, -1])

    @property
    def single(self) -> bool:
        """Whether this holds one rotation (`quat` of shape (4,))."""
        return self.quat.ndim == 1


class Slerp(typing.NamedTuple):
    """Spherical linear interpolation of rotations, as
    `jax.scipy.spatial.transform.Slerp`: make it with `Slerp.init(times, rotations)`, call
    it with the times to interpolate at.

    Example:
        >>> keys = Rotation.from_euler('zxy', [[90, 0, 0], [0, 45, 0]], degrees=True)
        >>> Slerp.init([0, 1], keys)([0.0, 0.5, 1.0]).as_euler('zxy')
    """

    times: typing.Any
    timedelta: typing.Any
    rotations: Rotation
    rotvecs: typing.Any

    @classmethod
    def init(cls, times, rotations: Rotation):
        """The interpolator through `rotations` (at least 2) at increasing `times` (not
        checked: the check would need concrete values)."""
        if not isinstance(rotations, Rotation):
            raise TypeError("`rotations` must be a `Rotation` instance.")
        if rotations.single or len(rotations) == 1:
            raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
        times = jnp.asarray(times, dtype=rotations.quat.dtype)
        if times.ndim != 1:
            raise ValueError(f"Expected times to be specified in a 1 dimensional array, got "
                             f"{times.ndim} dimensions.")  # fmt: skip
        if times.shape[0] != len(rotations):
            raise ValueError(f"Expected number of rotations to be equal to number of "
                             f"timestamps given, got {len(rotations)} rotations and "
                             f"{times.shape[0]} timestamps.")  # fmt: skip
        starts = Rotation(rotations.as_quat()[:-1])
        ends = Rotation(rotations.as_quat()[1:])
        return cls(
            times=times,
            timedelta=jnp.diff(times),
            rotations=starts,
            rotvecs=(starts.inv() * ends).as_rotvec(),
        )

    def __call__(self, times):
        """The interpolated rotations at `times` (a scalar gives one rotation)."""
        compute_times = jnp.asarray(times, dtype=self.times.dtype)
        if compute_times.ndim > 1:
            raise ValueError("`times` must be at most 1-dimensional.")
        single_time = compute_times.ndim == 0
        compute_times = jnp.atleast_1d(compute_times)
        ind = jnp.maximum(jnp.searchsorted(self.times, compute_times) - 1, 0)
        alpha = (compute_times - self.times[ind]) / self.timedelta[ind]
        step = Rotation.from_rotvec(self.rotvecs[ind] * alpha[:, None])
        result = self.rotations[ind] * step
        return result[0] if single_time else result


# ---- one rotation at a time, vectorised over leading axes -------------------------------------


def _apply(matrix, vectors, inverse: bool):
    @_vectorized("(m,m),(m)->(m)")
    def apply(matrix, vector):
        return (matrix.T if inverse else matrix) @ vector

    return apply(matrix, vectors)


@_vectorized("(m)->(n,n)")
def _as_matrix(quat):
    x, y, z, w = quat[0], quat[1], quat[2], quat[3]
    x2, y2, z2, w2 = x * x, y * y, z * z, w * w
    xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
    return jnp.array(
        [
            [+x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw)],
            [2 * (xy + zw), -x2 + y2 - z2 + w2, 2 * (yz - xw)],
            [2 * (xz - yw), 2 * (yz + xw), -x2 - y2 + z2 + w2],
        ]
    )


@_vectorized("(m)->(n)")
def _as_mrp(quat):
    sign = jnp.where(quat[3] < 0, -1.0, 1.0)
    denominator = 1.0 + sign * quat[3]
    return sign * quat[:3] / denominator


def _as_rotvec(quat, degrees: bool):
    @_vectorized("(m)->(n)")
    def as_rotvec(quat):
        quat = jnp.where(quat[3] < 0, -quat, quat)  # w >= 0 keeps the angle in [0, pi]
        angle = 2.0 * jnp.arctan2(_vector_norm(quat[:3]), quat[3])
        angle2 = angle * angle
        # the series of angle / sin(angle / 2) near 0, where the quotient loses precision
        small_scale = 2 + angle2 / 12 + 7 * angle2 * angle2 / 2880
        large_scale = angle / jnp.sin(angle / 2)
        scale = jnp.where(angle <= 1e-3, small_scale, large_scale)
        if degrees:
            scale = jnp.rad2deg(scale)
        return scale * jnp.array(quat[:3])

    return as_rotvec(quat)


@_vectorized("(n),(n)->(n)")
def _compose_quat(p, q):
    cross = jnp.cross(p[:3], q[:3])
    return jnp.array(
        [
            p[3] * q[0] + q[3] * p[0] + cross[0],
            p[3] * q[1] + q[3] * p[1] + cross[1],
            p[3] * q[2] + q[3] * p[2] + cross[2],
            p[3] * q[3] - p[0] * q[0] - p[1] * q[1] - p[2] * q[2],
        ]
    )


def _compute_euler_from_quat(quat, axes: tuple, extrinsic: bool, degrees: bool):
    # Bernardes and Viollet (2022), "Quaternion to Euler angles conversion", as SciPy
    angle_first, angle_third = (0, 2) if extrinsic else (2, 0)
    i, j, k = axes if extrinsic else axes[::-1]
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign_value = (i - j) * (j - k) * (k - i) // 2

    @_vectorized("(m)->(n)")
    def euler(quat):
        sign = jnp.array(sign_value, dtype=quat.dtype)
        eps = 1e-7
        if symmetric:
            a, b, c, d = quat[3], quat[i], quat[j], quat[k] * sign
        else:
            a = quat[3] - quat[j]
            b = quat[i] + quat[k] * sign
            c = quat[j] + quat[3]
            d = quat[k] * sign - quat[i]
        angles = jnp.zeros(3, dtype=quat.dtype)
        angles = angles.at[1].set(2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b)))
        # case 1: the middle angle is 0, case 2: it is pi (gimbal lock), else case 0
        case = jnp.where(jnp.abs(angles[1] - np.pi) <= eps, 2, 0)
        case = jnp.where(jnp.abs(angles[1]) <= eps, 1, case)
        half_sum = jnp.arctan2(b, a)
        half_diff = jnp.arctan2(d, c)
        degenerate = 2 * half_diff * (-1 if extrinsic else 1)
        angles = angles.at[0].set(jnp.where(case == 1, 2 * half_sum, degenerate))
        first = jnp.where(case == 0, half_sum - half_diff, angles[angle_first])
        angles = angles.at[angle_first].set(first)
        third = jnp.where(case == 0, half_sum + half_diff, angles[angle_third])
        angles = angles.at[angle_third].set(third)
        if not symmetric:
            angles = angles.at[angle_third].set(angles[angle_third] * sign)
            angles = angles.at[1].set(angles[1] - np.pi / 2)
        angles = (angles + np.pi) % (2 * np.pi) - np.pi
        return jnp.rad2deg(angles) if degrees else angles

    return euler(quat)


def _elementary_quat_compose(angles, axes: tuple, intrinsic: bool, degrees: bool):
    radians = jnp.deg2rad(angles)
    # JAX selects with where, which promotes integer angles to radians' float dtype
    angles = radians if degrees else angles.astype(radians.dtype)

    @_vectorized("(m)->(n)")
    def compose(angles):
        result = _make_elementary_quat(axes[0], angles[0])
        for idx in range(1, len(axes)):
            quat = _make_elementary_quat(axes[idx], angles[idx])
            result = _compose_quat(result, quat) if intrinsic else _compose_quat(quat, result)
        return result

    return compose(angles)


def _from_rotvec(rotvec, degrees: bool):
    radians = jnp.deg2rad(rotvec)
    rotvec = radians if degrees else jnp.asarray(rotvec).astype(radians.dtype)

    @_vectorized("(m)->(n)")
    def from_rotvec(rotvec):
        angle = _vector_norm(rotvec)
        angle2 = angle * angle
        # the series of sin(angle / 2) / angle near 0
        small_scale = 0.5 - angle2 / 48 + angle2 * angle2 / 3840
        large_scale = jnp.sin(angle / 2) / angle
        scale = jnp.where(angle <= 1e-3, small_scale, large_scale)
        return jnp.hstack([scale * rotvec, jnp.cos(angle / 2)])

    return from_rotvec(rotvec)


@_vectorized("(m,m)->(n)")
def _from_matrix(matrix):
    # Shepperd's method: build the quaternion from the largest of its 4 components
    trace = matrix[0, 0] + matrix[1, 1] + matrix[2, 2]
    decision = jnp.array([matrix[0, 0], matrix[1, 1], matrix[2, 2], trace], dtype=matrix.dtype)
    choice = jnp.argmax(decision)
    i = choice
    j = (i + 1) % 3
    k = (j + 1) % 3
    quat_012 = jnp.zeros(4, dtype=matrix.dtype)
    quat_012 = quat_012.at[i].set(1 - decision[3] + 2 * matrix[i, i])
    quat_012 = quat_012.at[j].set(matrix[j, i] + matrix[i, j])
    quat_012 = quat_012.at[k].set(matrix[k, i] + matrix[i, k])
    quat_012 = quat_012.at[3].set(matrix[k, j] - matrix[j, k])
    quat_3 = jnp.zeros(4, dtype=matrix.dtype)
    quat_3 = quat_3.at[0].set(matrix[2, 1] - matrix[1, 2])
    quat_3 = quat_3.at[1].set(matrix[0, 2] - matrix[2, 0])
    quat_3 = quat_3.at[2].set(matrix[1, 0] - matrix[0, 1])
    quat_3 = quat_3.at[3].set(1 + decision[3])
    quat = jnp.where(choice != 3, quat_012, quat_3)
    return _normalize_quaternion(quat)


@_vectorized("(m)->(n)")
def _from_mrp(mrp):
    mrp_squared_plus_1 = jnp.dot(mrp, mrp) + 1
    return jnp.hstack([2 * mrp[:3], (2 - mrp_squared_plus_1)]) / mrp_squared_plus_1


@_vectorized("(n)->(n)")
def _inv(quat):
    return quat * jnp.array([-1, -1, -1, 1], dtype=quat.dtype)


@_vectorized("(n)->()")
def _magnitude(quat):
    return 2.0 * jnp.arctan2(_vector_norm(quat[:3]), jnp.abs(quat[3]))


def _make_elementary_quat(axis: int, angle):
    quat = jnp.zeros(4, dtype=angle.dtype)
    quat = quat.at[3].set(jnp.cos(angle / 2.0))
    return quat.at[axis].set(jnp.sin(angle / 2.0))


@_vectorized("(n)->(n)")
def _normalize_quaternion(quat):
    return quat / _vector_norm(quat)


@_vectorized("(n)->()")
def _vector_norm(vector):
    return jnp.sqrt(jnp.dot(vector, vector))


@_vectorized("(n)->(n)")
def _make_canonical(quat):
    is_neg = quat < 0
    is_zero = quat == 0
    neg = (
        is_neg[3]
        | (is_zero[3] & is_neg[0])
        | (is_zero[3] & is_zero[0] & is_neg[1])
        | (is_zero[3] & is_zero[0] & is_zero[1] & is_neg[2])
    )
    return jnp.where(neg, -quat, quat)
