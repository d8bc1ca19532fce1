"""InferScope bootstrap, put first on PYTHONPATH by is-record.

Starts the Python collector in every Python process of a recorded run, then
runs the user's own sitecustomize (the next one on sys.path), if any.
sys.path is left as Python set it up.
"""


def _inferscope_next():
    """The user's own sitecustomize.py, the next on sys.path, or None."""
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        try:
            if os.path.abspath(entry or os.curdir) == here:
                continue
        except (TypeError, ValueError):
            continue
        path = os.path.join(entry or os.curdir, "sitecustomize.py")
        if os.path.isfile(path):
            return path
    return None


def _inferscope_boot():
    import os
    import sys

    env = os.environ
    if env.get("INFERSCOPE_ENABLED") != "1" or not env.get("INFERSCOPE_DIR"):
        return
    try:
        import _inferscope
    except ImportError as e:
        if env.get("INFERSCOPE_LOG_LEVEL", "info") != "error":
            sys.stderr.write("inferscope: warning: no Python collector for "
                             "Python %d.%d (%s); recording without Python "
                             "calls\n" % (sys.version_info[0],
                                          sys.version_info[1], e))
        try:
            # said once: is-record need not warn about this process again
            open(os.path.join(env["INFERSCOPE_DIR"],
                              "%d.nopy" % os.getpid()), "w").close()
        except OSError:
            pass
        return
    try:
        mb = int(env.get("INFERSCOPE_TRACE_SIZE_MB", "100"))
        min_us = int(env.get("INFERSCOPE_PY_MIN_US", "0"))
    except ValueError:
        mb, min_us = 100, 0
    calls = env.get("INFERSCOPE_PY_CALLS", "1") == "1"
    ring = env.get("INFERSCOPE_RING", "0") == "1"
    producer = "inferscope-python 0.1.0 (CPython %d.%d.%d)" % \
        sys.version_info[:3]
    # imported before recording starts: the program's imports are its
    # own, these are ours (threading up to 3.11, where each thread needs
    # its hook; from 3.12 it is the program's, if it imports it: below)
    import atexit
    import gc
    if sys.version_info < (3, 12):
        import threading
    try:
        _inferscope._start(env["INFERSCOPE_DIR"], mb, min_us, calls, producer,
                           ring)
    except OSError as e:
        sys.stderr.write("inferscope: warning: %s\n" % e)
        return

    def stop():
        # an interrupt here (Ctrl-C pressed again, or a kill of the whole
        # process group, which is-record passes on as well) neither cuts
        # the trace short nor prints "Exception ignored in atexit callback"
        while True:
            try:
                _inferscope._stop()
                return
            except KeyboardInterrupt:
                continue
            except OSError as e:
                # one line, not a traceback in the program's own output
                sys.stderr.write("inferscope: error: %s\n" % e)
                return

    atexit.register(stop)
    # garbage collections, each as a call on the thread it paused
    gc.callbacks.append(_inferscope._gc)

    def named(threading):
        # the first event of each new thread names it (and, with calls
        # recorded through setprofile, hands over to the C hook)
        threading.setprofile(_inferscope._thread_hook)
        # a thread that renames itself (current_thread().name = ...) is
        # named again; a name given before start is taken by the hook
        name = threading.Thread.name

        def set_name(self, value, _set=name.fset):
            _set(self, value)
            if self is threading.current_thread():
                _inferscope._name_thread(str(value))

        threading.Thread.name = property(name.fget, set_name, name.fdel,
                                         name.__doc__)

    if "threading" in sys.modules:
        named(sys.modules["threading"])
    else:
        # sys.monitoring sees every thread without threading's hook: a
        # program that never imports threading does not pay for it (4 ms
        # of every process's start, its imports); one that does has its
        # threads named from then on, before any can start
        _inferscope_after_import("threading", named)

    if calls and sys.version_info < (3, 12):
        # threads started by _thread directly (threading keeps its own
        # reference to the function, taken at its import above): up to
        # 3.11 the profile hook is per thread, so each starts it first
        import _thread

        def start_new_thread(function, args, kwargs={},
                             _real=_thread.start_new_thread,
                             _raw=_inferscope._raw_thread):
            def recorded(*a, **k):
                _raw()
                return function(*a, **k)
            return _real(recorded, args, kwargs)

        _thread.start_new_thread = _thread.start_new = start_new_thread

    real_exit = os._exit

    def exit_flushed(code):
        # os._exit() skips atexit: forked children (multiprocessing's among
        # them) leave through it, and programs that skip slow teardown;
        # finish the stream first
        try:
            stop()
        finally:
            real_exit(code)

    os._exit = exit_flushed
    # the writer thread stops across a fork: the program forks with the
    # threads it has without us, and Python 3.12+ warns of none it would
    # not have warned of unrecorded
    os.register_at_fork(before=_inferscope._fork_before,
                        after_in_parent=_inferscope._fork_parent,
                        after_in_child=_inferscope._after_fork)

    def exec_flushed(real):
        # an exec replaces the program without atexit: write everything
        # first (the new program, Python or not, starts afresh; its stream
        # is appended to this one's, same pid); os.exec*p* go through these
        def flushed(*args, **kwargs):
            _inferscope._flush()
            return real(*args, **kwargs)
        return flushed

    os.execv = exec_flushed(os.execv)
    os.execve = exec_flushed(os.execve)


class _InferscopeAfter(object):
    """Calls fn(module) just after the module name is imported (executed),
    found by the finders after this one: the import is the program's own,
    as it would have been.  Leaves sys.meta_path at its first look."""

    def __init__(self, name, fn):
        self.name, self.fn = name, fn

    def find_spec(self, fullname, path=None, target=None):
        import sys
        if fullname != self.name:
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find else None
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _InferscopeLoader(spec.loader, self.fn)
        return spec


class _InferscopeLoader(object):
    """The real loader, and fn on its module once executed: the module's
    __loader__ and __spec__.loader are the real one again."""

    def __init__(self, real, fn):
        self.real, self.fn = real, fn

    def create_module(self, spec):
        return self.real.create_module(spec)

    def exec_module(self, module):
        real = self.real
        module.__loader__ = real
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = real
        real.exec_module(module)
        self.fn(module)


def _inferscope_after_import(name, fn):
    import sys
    sys.meta_path.insert(0, _InferscopeAfter(name, fn))


def _inferscope_chain(path):
    import sys
    try:
        # importlib.util's own two, from the modules it takes them from,
        # which every Python has loaded at start: importing importlib.util
        # (contextlib, warnings) took 3 to 6 ms of every process's start
        from _frozen_importlib import module_from_spec
        from _frozen_importlib_external import spec_from_file_location
    except ImportError:
        from importlib.util import module_from_spec, spec_from_file_location

    mine = sys.modules.get(__name__)
    spec = spec_from_file_location("sitecustomize", path)
    user = module_from_spec(spec)
    sys.modules["sitecustomize"] = user
    try:
        spec.loader.exec_module(user)
    except BaseException:
        sys.modules["sitecustomize"] = mine
        raise


# found before recording starts: these calls are ours, not the program's
_inferscope_user = _inferscope_next()
_inferscope_boot()
if _inferscope_user is not None:
    _inferscope_chain(_inferscope_user)
