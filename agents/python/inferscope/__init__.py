"""InferScope's Python API: mark regions and moments of an inference run.

    from inferscope import scope, mark_event

    with scope("inference"):
        output = model(inputs)

    @scope("tokenize")
    def tokenize(text): ...

    mark_event("tokenization_complete", metadata={"tokens": 1024})

    start()     # with is-record --capture-range api: record from here
    stop()      # pause recording, in every recorded process
    dump()      # with is-record --ring: write the flight recorder now

Traces, read in any Python through InferScope's own C reader:

    for rec in read("run.ist"): ...          # dicts, as is-cat prints them
    a = analysis("run.ist")                  # a["verdict"], a["findings"]

Under is-record these become `scope` and `instant` events of the trace;
anywhere else they cost next to nothing (under 100 ns a call).
"""

import functools

__all__ = ["scope", "mark_event", "enabled", "start", "stop", "dump",
           "read", "analysis", "Analysis"]
__version__ = "0.1.0"

def _decorate(s, fn):
    """@scope(name): time every call of fn."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with s:
            return fn(*args, **kwargs)
    return wrapper


try:
    from _inferscope import scope, mark_event, enabled, _capture, _dump
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

    def _capture(on):
        return False

    def _dump():
        return False


def start():
    """Start recording, or resume it, in every process is-record records.

    With `is-record --capture-range api` recording waits for this call.
    Returns whether recording switched on: False outside is-record, when it
    was on already, or when the capture is over (--duration).
    """
    return _capture(True)


def stop():
    """Pause recording in every recorded process until start() (or
    SIGUSR2 to is-record).  Calls under way end at the pause, marked cut.
    Returns whether recording switched off."""
    return _capture(False)


def dump():
    """Write the flight recorder's window now, in every recorded process.

    Under `is-record --ring` (or `--dump-on api`) each process keeps only
    its newest events; this writes them to the trace, as a latency spike
    or an error is seen, and recording goes on.  Returns whether the
    recorders were asked: False outside is-record or without --ring.
    """
    return _dump()


def _io():
    try:
        import _inferscope_io
    except ImportError as e:
        raise ImportError("inferscope: no trace reader built for this "
                          "Python (%s)" % e) from None
    return _inferscope_io


def _path(src):
    """A trace's path from a path or an open file."""
    import os
    if hasattr(src, "fileno"):
        return "/proc/self/fd/%d" % src.fileno()
    return os.fspath(src)


def read(src):
    """The records of a trace (a path or an open file), each a dict with the
    field names and values of is-cat's JSON Lines (formats/jsonl.md), merged
    or not, every segment.  A damaged trace raises ValueError with the
    message the tools print; a truncated one warns and yields what
    precedes the cut."""
    r = _io()._Reader(_path(src))
    yield from r
    if r.truncated is not None:
        import warnings
        warnings.warn(r.truncated, stacklevel=2)


def _categorical(np, pd, values, n, strings):
    """A string column as pandas' Categorical: the reader's codes (-1
    where absent), numbered as first seen, renumbered in place so that
    the categories are in sorted order (sort_values sorts by name, as on
    str), in the narrowest integers pandas keeps codes in."""
    order = np.argsort(np.array(strings, dtype=object), kind="stable")
    k = len(strings)
    width = np.int8 if k < 127 else np.int16 if k < 32767 else np.int32
    table = np.empty(k + 1, np.int32)
    table[0] = -1                    # absent stays absent
    table[order + 1] = np.arange(k, dtype=np.int32)
    _io().recode(values, table.tobytes(), np.dtype(width).itemsize)
    return pd.Categorical.from_codes(np.frombuffer(values, width, count=n),
                                     categories=[strings[i] for i in order])


def dataframe(src, type):
    """The records of one type (a path or an open file) as a pandas
    DataFrame: one column per field of formats/jsonl.md, in its order;
    times and other integers as int64 (pandas' nullable Int64 where some
    row lacks the field), strings as pandas' category (each distinct
    string once, in sorted order; NaN where absent), flags as bool (a
    call's raised and yielded False where absent, as the format says).  Read
    by libinferscope's reader into columns, with no Python object per
    record; pandas is imported only here.  A truncated trace warns and
    gives the rows before the cut."""
    import numpy as np
    import pandas as pd
    cols, n, truncated = _io().columns(_path(src), type)
    data = {}
    for name, kind, values, mask, extra in cols:
        if kind == "o":
            a = np.empty(n, dtype=object)
            a[:] = extra
        elif kind == "s":
            a = _categorical(np, pd, values, n, extra)
        elif kind == "f":
            a = np.frombuffer(values, np.float64)
        else:
            a = np.frombuffer(values, np.int64 if kind == "i" else np.bool_)
            if mask is not None:
                m = np.frombuffer(mask, np.bool_)
                a = (pd.arrays.IntegerArray if kind == "i" else
                     pd.arrays.BooleanArray)(a, m)
        data[name] = a
    if truncated is not None:
        import warnings
        warnings.warn(truncated, stacklevel=2)
    return pd.DataFrame(data, copy=False)


class Analysis(dict):
    """An analysis (formats/analysis.md) as a dict, shown in Jupyter as the
    HTML report and in a REPL as the verdict and the top findings."""

    _trace = None       # the trace it came from: the HTML's timeline
    _step = None        # the step it was analysed with

    def _text(self):
        import json
        return json.dumps(self)

    def markdown(self):
        """The Markdown report, as is-report writes it."""
        return _io().render(self._text(), "markdown")

    def html(self):
        """The HTML report, one self-contained page; with the timeline
        charts when the analysis was read from a trace file that is still
        there (they are drawn from its records)."""
        import os
        if self._trace is not None and os.path.exists(self._trace):
            return _io().report(self._trace, "html", self._step)[0]
        return _io().render(self._text(), "html")

    def _repr_html_(self):
        return self.html()

    def __repr__(self):
        lines = [l for l in self.markdown().splitlines()
                 if l.startswith("**Verdict") or l.startswith("### ")]
        return "\n".join(lines[:4]) or "<inferscope analysis>"


def analysis(src, step=None):
    """The analysis of a trace (a path or an open file) as a dict:
    a["verdict"], a["findings"].  It is the analysis the trace carries
    (is-analyze's output) or, without one, made afresh by InferScope's own
    analyzer with its default rules, as is-report does; step names the
    scope, NVTX range or function that is a step (is-analyze --step), else
    it is found."""
    import json
    path = _path(src)
    text, truncated = _io().report(path, "json", step)
    if truncated is not None:
        import warnings
        warnings.warn(truncated, stacklevel=2)
    a = Analysis(json.loads(text)["analysis"])
    a._step = step
    if not hasattr(src, "fileno"):
        import os
        a._trace = os.path.abspath(path)
    return a
