"""Lowering helpers shared by the frontends: exact compositions of the 32
Arm NN layers for common operations (see builder.NetBuilder)."""
from .builder import FLT_MAX, NetBuilder, Unsupported  # noqa: F401
