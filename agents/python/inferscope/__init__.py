"""InferScope's Python API: mark regions and moments of an inference run.

    from inferscope import scope, mark_event

    with scope("inference"):
        output = model(inputs)

    @scope("tokenize")
    def tokenize(text): ...

    mark_event("tokenization_complete", metadata={"tokens": 1024})

Under is-record these become `scope` and `instant` events of the trace;
anywhere else they cost next to nothing (under 100 ns a call).
"""

import functools

__all__ = ["scope", "mark_event", "enabled"]
__version__ = "0.1.0"

def _decorate(s, fn):
    """@scope(name): time every call of fn."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with s:
            return fn(*args, **kwargs)
    return wrapper


try:
    from _inferscope import scope, mark_event, enabled
except ImportError:  # no collector built for this Python: a no-op API
    class scope:
        """A timed region, as a context manager or a decorator."""

        __slots__ = ("name",)

        def __init__(self, name):
            if not isinstance(name, str):
                raise TypeError("scope(name): name must be one str")
            self.name = name

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def __call__(self, fn):
            return _decorate(self, fn)

    def mark_event(name, metadata=None):
        """Record an instant `name` with an optional metadata dict."""
        if metadata is not None and not isinstance(metadata, dict):
            raise TypeError("mark_event: metadata must be a dict or None")

    def enabled():
        """Whether this process is being recorded."""
        return False
