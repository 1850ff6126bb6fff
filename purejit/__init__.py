"""purejit: a JAX-style functional compiler with its own tracing, IR and passes.

import purejit, purejit.numpy as jnp

@purejit.jit
def f(x, w):
    return purejit.nn.relu(x @ w).sum()
"""

from purejit.backend import versions as _versions  # noqa: F401 - first: checks the jax range
from purejit.config import config
from purejit import tree_util
from purejit.api import Compiled, Lowered, disable_jit, jit
from purejit.runtime import Array
from purejit.errors import (
    ConcretizationTypeError,
    PurejitTypeError,
    TracerArrayConversionError,
    UnexpectedTracerError,
)
from purejit import numpy, lax, nn
from purejit import ops
from purejit import random
from purejit import sharding
from purejit.sharding import device_put
from purejit.shard_map import shard_map
from purejit.backend.pjrt import devices
from purejit.compiler.stats import cache_stats
from purejit.compiler.options import CompilerEffortLevel, Inline  # noqa: E402, F401
from purejit.export import Exported, deserialize, export
from purejit.api import explain
from purejit import ad_checkpoint, test_util
from purejit.ad_checkpoint import checkpoint, checkpoint_policies, custom_remat, remat
from purejit.custom_derivatives import closure_convert, custom_jvp, custom_vjp
from purejit.autodiff import (
    grad,
    jvp,
    linear_transpose,
    linearize,
    value_and_grad,
    vjp,
)

__version__ = "0.1.0"

__all__ = [
    "Array",
    "Compiled",
    "ConcretizationTypeError",
    "Lowered",
    "PurejitTypeError",
    "TracerArrayConversionError",
    "UnexpectedTracerError",
    "cache_stats",
    "config",
    "deserialize",
    "export",
    "Exported",
    "explain",
    "device_put",
    "devices",
    "disable_jit",
    "jit",
    "lax",
    "nn",
    "ops",
    "numpy",
    "random",
    "shard_map",
    "sharding",
    "tree_util",
    "grad",
    "jvp",
    "linear_transpose",
    "linearize",
    "value_and_grad",
    "vjp",
    "ad_checkpoint",
    "checkpoint",
    "checkpoint_policies",
    "closure_convert",
    "custom_jvp",
    "custom_vjp",
    "remat",
    "test_util",
]

from purejit import tree  # noqa: E402

__all__ += ["tree", "CompilerEffortLevel", "Inline", "custom_remat"]
from purejit import debug  # noqa: E402
from purejit.debug import pure_callback  # noqa: E402

__all__ += ["debug", "pure_callback"]
from purejit.inspection import (  # noqa: E402
    ShapeDtypeStruct,
    block_until_ready,
    device_get,
    eval_shape,
    make_jaxpr,
    typeof,
)

__all__ += [
    "ShapeDtypeStruct",
    "block_until_ready",
    "device_get",
    "eval_shape",
    "make_jaxpr",
    "typeof",
]
from purejit.transforms.vmap import vmap  # noqa: E402
from purejit.pmap import pmap  # noqa: E402

__all__ += ["pmap", "vmap"]
from purejit.jacobians import hessian, jacfwd, jacobian, jacrev  # noqa: E402

__all__ += ["hessian", "jacfwd", "jacobian", "jacrev"]
from purejit._config_contexts import (  # noqa: E402
    debug_infs,
    debug_nans,
    default_matmul_precision,
    enable_x64,
    explain_cache_misses,
    log_compiles,
    numpy_dtype_promotion,
    numpy_rank_promotion,
)

__all__ += ["default_matmul_precision", "enable_x64", "explain_cache_misses", "log_compiles"]
__all__ += ["debug_infs", "debug_nans", "numpy_dtype_promotion", "numpy_rank_promotion"]
from purejit.autodiff import float0, fwd_and_bwd  # noqa: E402
from purejit.custom_derivatives import custom_gradient  # noqa: E402

__all__ += ["custom_gradient", "float0", "fwd_and_bwd"]
from purejit.transforms import solves as _solves  # noqa: E402, F401  (lax.custom_root, ...)
from purejit import special_gradients as _special_gradients  # noqa: E402, F401  (lax.igamma, ...)
from purejit import dtypes, scipy, typing  # noqa: E402
from purejit.platform import (  # noqa: E402
    Device,
    default_backend,
    device_count,
    ensure_compile_time_eval,
    local_device_count,
    local_devices,
    named_call,
    named_scope,
    process_count,
    process_index,
)
from purejit.sharding import NamedSharding, P, make_mesh, reshard, set_mesh  # noqa: E402
from purejit.sharding import get_abstract_mesh, get_mesh, use_abstract_mesh  # noqa: E402

__all__ += ["dtypes", "scipy", "typing", "Device", "default_backend", "device_count"]
__all__ += ["local_device_count", "local_devices", "named_call", "named_scope"]
__all__ += ["ensure_compile_time_eval"]
__all__ += ["process_count", "process_index", "NamedSharding", "P", "make_mesh"]
__all__ += ["reshard", "set_mesh", "get_abstract_mesh", "get_mesh", "use_abstract_mesh"]
from purejit.environment import (  # noqa: E402
    clear_caches,
    default_device,
    effects_barrier,
    host_count,
    host_id,
    host_ids,
    make_user_context,
    memory,
    print_environment_info,
    process_indices,
)
from purejit.global_arrays import (  # noqa: E402
    copy_to_host_async,
    live_arrays,
    make_array_from_callback,
    make_array_from_process_local_data,
    make_array_from_single_device_arrays,
)

__all__ += ["clear_caches", "default_device", "effects_barrier", "host_count", "host_id"]
__all__ += ["host_ids"]
from purejit.lax.dslice import ds  # noqa: E402

__all__ += ["ds"]
__all__ += ["make_user_context", "memory", "print_environment_info", "process_indices"]
__all__ += ["copy_to_host_async", "live_arrays", "make_array_from_callback"]
__all__ += ["make_array_from_process_local_data", "make_array_from_single_device_arrays"]
