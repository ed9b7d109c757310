"""Context variables set for the extent of a `with` block: how a trace tells the layers it reaches which graph
it builds (a fused or kernels train step, a LiteRT or served graph)."""

import contextlib


@contextlib.contextmanager
def setting(variable, value=True):
    """`variable` (a `contextvars.ContextVar`) is `value` within this context and what it was after."""
    token = variable.set(value)
    try:
        yield
    finally:
        variable.reset(token)
