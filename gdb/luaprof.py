# luaprof.py: the Lua side of a process inside gdb, through libluacore.
#
# Load with "gdb -x luaprof.py", "source luaprof.py" in a session, or
# gdb's auto-load once installed (see doc/luacore-gdb.md).  Commands:
#   lua-bt [-a] [-full] [THREAD...]   mixed C+Lua backtrace
#   lua-states [--vm-name GLOBAL]     every VM (named by a global) and coroutine
#   lua-vm [L]                        one lua_State's and its VM's internals
#   lua-stack [L] [-residue N]        a lua_State's data stack
#   lua-value [-tvalue|-gc] EXPR      one Lua value
#   lua-heap [--top N] [--vm ADDR]    census of the Lua heaps
#   lua-path ADDR [--strong]          shortest path from the GC roots to ADDR
#   lua-layout [FILE|X.Y.Z|default]   where the Lua layout comes from
#
# This file holds no Lua decoder.  gdb unwinds the native frames and
# serves memory; libluacore, the library luacore-inspect uses, reads the
# Lua structures with layouts from the DWARF of the files gdb loaded, and
# formats the text, so both tools print the same lines for the same core.

import ctypes
import ctypes.util
import os
import re

import gdb

# "make install" writes the library directory here.
_INSTALLED_LIBDIR = None
# gdb defines __file__ only while it sources the script.
_HERE = os.path.dirname(os.path.abspath(__file__))

# ---- the library -----------------------------------------------------


class _FrameRegs(ctypes.Structure):
    _fields_ = [
        ("pc", ctypes.c_uint64),
        ("activation", ctypes.c_bool),
        ("regmask", ctypes.c_uint32),
        ("regs", ctypes.c_uint64 * 17),
    ]


class _ReportOptions(ctypes.Structure):
    _fields_ = [
        ("max_frames", ctypes.c_int),
        ("locals", ctypes.c_bool),
        ("stack", ctypes.c_bool),
        ("residue", ctypes.c_int),
        ("tid", ctypes.c_int),
        ("vm", ctypes.c_uint64),
        ("states", ctypes.POINTER(ctypes.c_uint64)),
        ("nstates", ctypes.c_size_t),
        ("no_native", ctypes.c_bool),
        ("no_scan", ctypes.c_bool),
        ("no_vms", ctypes.c_bool),
        ("vm_name", ctypes.c_char_p),
    ]


class _TextOptions(ctypes.Structure):
    _fields_ = [
        ("parts", ctypes.c_uint),
        ("state", ctypes.c_uint64),
        ("state_frames", ctypes.c_bool),
    ]


# struct lc_frame, and the leading members of struct lc_thread and struct
# lc_report (luacore.h): enough to learn which lua_State a frame runs.
LC_FRAME_NATIVE, LC_FRAME_LUA = 0, 1


class _Frame(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_int),
        ("pc", ctypes.c_uint64),
        ("sp", ctypes.c_uint64),
        ("function", ctypes.c_char_p),
        ("linkage_name", ctypes.c_char_p),
        ("module", ctypes.c_char_p),
        ("file", ctypes.c_char_p),
        ("line", ctypes.c_int),
        ("inlined", ctypes.c_bool),
        ("what", ctypes.c_char_p),
        ("source", ctypes.c_char_p),
        ("short_src", ctypes.c_char_p),
        ("currentline", ctypes.c_int),
        ("linedefined", ctypes.c_int),
        ("line_from", ctypes.c_char_p),
        ("savedpc_line", ctypes.c_int),
        ("name", ctypes.c_char_p),
        ("namewhat", ctypes.c_char_p),
        ("global_name", ctypes.c_char_p),
        ("istailcall", ctypes.c_bool),
        ("state", ctypes.c_uint64),
        ("ci", ctypes.c_uint64),
        ("cfunc", ctypes.c_uint64),
        ("unplaced", ctypes.c_bool),
        ("partial", ctypes.c_bool),
        ("vars", ctypes.c_void_p),
        ("nvars", ctypes.c_size_t),
        ("traceback", ctypes.c_char_p),
        ("continued", ctypes.c_bool),
    ]


class _Thread(ctypes.Structure):
    _fields_ = [
        ("tid", ctypes.c_int),
        ("name", ctypes.c_char_p),
        ("signo", ctypes.c_int),
        ("crashed", ctypes.c_bool),
        ("frames", ctypes.POINTER(_Frame)),
        ("nframes", ctypes.c_size_t),
        ("states", ctypes.POINTER(ctypes.c_uint64)),
        ("nstates", ctypes.c_size_t),
    ]


class _Report(ctypes.Structure):
    _fields_ = [
        ("core", ctypes.c_char_p),
        ("executable", ctypes.c_char_p),
        ("pid", ctypes.c_int),
        ("signo", ctypes.c_int),
        ("si_code", ctypes.c_int),
        ("fault_addr", ctypes.c_uint64),
        ("lua_version", ctypes.c_char_p),
        ("lua_module", ctypes.c_char_p),
        ("threads", ctypes.POINTER(_Thread)),
        ("nthreads", ctypes.c_size_t),
    ]


# struct lc_heap_options (luacore.h), member for member.
class _HeapOptions(ctypes.Structure):
    _fields_ = [
        ("vm", ctypes.c_uint64),
        ("top", ctypes.c_size_t),
        ("paths", ctypes.c_bool),
        ("strong", ctypes.c_bool),
        ("path_to", ctypes.POINTER(ctypes.c_uint64)),
        ("npath_to", ctypes.c_size_t),
        ("baseline", ctypes.c_char_p),
        ("baseline_exe", ctypes.c_char_p),
        ("snapshot", ctypes.c_bool),
        ("pprof_paths", ctypes.c_bool),
    ]


LC_TEXT_HEADER, LC_TEXT_WARNINGS, LC_TEXT_THREADS, LC_TEXT_VMS = 1, 2, 4, 8
LC_OBJECT_TVALUE, LC_OBJECT_GC = 0, 1

_READ_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64,
                            ctypes.c_void_p, ctypes.c_size_t)

_lib = None
_libc = None
_lib_error = None


def _candidates():
    env = os.environ.get("LUACORE_LIB")
    if env:
        return [env]
    paths = [os.path.join(_HERE, "..", "libcore", ".libs", "libluacore.so")]
    if _INSTALLED_LIBDIR:
        paths.append(os.path.join(_INSTALLED_LIBDIR, "libluacore.so.0"))
    found = ctypes.util.find_library("luacore")
    if found:
        paths.append(found)
    return paths


def _declare(lib):
    vp, u64, sz, cp = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t, \
        ctypes.c_char_p
    sigs = {
        "lc_error_message": (cp, [vp]),
        "lc_error_destroy": (None, [vp]),
        "lc_target_set_layout": (vp, [vp, cp, cp]),
        "lc_set_debuginfo_path": (None, [cp]),
        "lc_target_create_callback": (vp, [_READ_FN, vp,
                                           ctypes.POINTER(vp)]),
        "lc_target_add_module_section": (vp, [vp, cp, cp, u64]),
        "lc_target_add_thread": (vp, [vp, ctypes.c_int, cp, ctypes.c_int,
                                      ctypes.POINTER(_FrameRegs), sz]),
        "lc_target_set_process": (vp, [vp, ctypes.c_int, cp, cp]),
        "lc_target_set_signal": (None, [vp, ctypes.c_int, ctypes.c_int,
                                        u64]),
        "lc_target_set_caching": (None, [vp, ctypes.c_bool]),
        "lc_target_add_region": (vp, [vp, u64, u64, ctypes.c_bool]),
        "lc_target_destroy": (None, [vp]),
        "lc_report_create": (vp, [vp, ctypes.POINTER(_ReportOptions),
                                  ctypes.POINTER(ctypes.POINTER(_Report))]),
        "lc_report_destroy": (None, [ctypes.POINTER(_Report)]),
        "lc_report_print_text_parts": (None, [ctypes.POINTER(_Report),
                                              ctypes.POINTER(_TextOptions),
                                              vp]),
        "lc_object_create": (vp, [vp, ctypes.c_int, u64, sz,
                                  ctypes.POINTER(vp)]),
        "lc_object_destroy": (None, [vp]),
        "lc_object_print_text": (None, [vp, vp]),
        "lc_print_escaped": (None, [cp, vp]),
        "lc_heap_create": (vp, [vp, ctypes.POINTER(_HeapOptions),
                                ctypes.POINTER(vp)]),
        "lc_heap_destroy": (None, [vp]),
        "lc_heap_print_text": (None, [vp, vp]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args


def _library():
    """libluacore, loaded once; a gdb.GdbError says what was tried."""
    global _lib, _libc, _lib_error
    if _lib:
        return _lib
    tried = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
            _declare(lib)
        except (OSError, AttributeError) as e:
            tried.append("%s (%s)" % (path, e))
            continue
        _libc = ctypes.CDLL(None)
        _libc.open_memstream.restype = ctypes.c_void_p
        _libc.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_void_p),
                                         ctypes.POINTER(ctypes.c_size_t)]
        _libc.fclose.argtypes = [ctypes.c_void_p]
        _libc.free.argtypes = [ctypes.c_void_p]
        _lib = lib
        return lib
    _lib_error = ("luacore: cannot load libluacore; tried: %s.  Build it "
                  "(make), install it, or set LUACORE_LIB to the path of "
                  "libluacore.so." % "; ".join(tried))
    raise gdb.GdbError(_lib_error)


def _check(err):
    if err:
        # Messages quote paths and names read from the target: escaped
        # by the library, as the report's text is.
        raw = _lib.lc_error_message(err)
        msg = _capture(lambda f: _lib.lc_print_escaped(raw, f))
        _lib.lc_error_destroy(err)
        raise gdb.GdbError("luacore: " + msg)


def _capture(fn):
    """Run fn(FILE *) and return what it wrote."""
    buf = ctypes.c_void_p()
    size = ctypes.c_size_t()
    f = _libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
    if not f:
        raise gdb.GdbError("luacore: open_memstream failed")
    try:
        fn(f)
    finally:
        _libc.fclose(f)
    text = ctypes.string_at(buf.value, size.value) if buf.value else b""
    _libc.free(buf)
    return text.decode(errors="replace")

# ---- what gdb knows about the process --------------------------------


_SECTION_RE = re.compile(
    r"^\s*0x([0-9a-f]+) - 0x[0-9a-f]+ is (\S+)(?: in (.*))?$")


def _local_path(path):
    """A file gdb loaded, as this machine can open it, or None.  gdb names
    a file it reads through a remote target "target:PATH"; libluacore
    needs it here: the same path is used (right for a gdbserver on this
    machine; for another machine, "set sysroot" to a local copy)."""
    if not path:
        return None
    if path.startswith("target:"):
        path = path[len("target:"):]
    return path if os.path.isfile(path) else None


def _gdb_text(command):
    """What a gdb command prints.  gdb hands it to Python as UTF-8 and
    fails on a file name (or thread name) that is not: say so, rather
    than end in a Python exception."""
    try:
        return gdb.execute(command, to_string=True)
    except UnicodeDecodeError as e:
        raise gdb.GdbError(
            "luacore: gdb cannot give Python the output of \"%s\": it "
            "holds a name that is not UTF-8 (%s); luacore-inspect reads "
            "such a core or process" % (command, e))


def _info_files():
    """(executable, core, [(path, section, address)]) from "info files"."""
    text = _gdb_text("info files")
    exe = core = None
    mods = {}
    block = None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Local core dump file:"):
            block = "core"
        elif line.startswith("Local exec file:"):
            block = "exec"
        m = re.match(r"^\s*`(.*)', file type", line)
        if m and block == "core" and core is None:
            core = m.group(1)
        elif m and block == "exec" and exe is None:
            exe = _local_path(m.group(1)) or m.group(1)
        m = _SECTION_RE.match(line)
        if not m or block != "exec" or m.group(2) != ".text":
            continue
        path = _local_path(m.group(3) or exe)
        if path and path not in mods:
            mods[path] = int(m.group(1), 16)
    if not mods:
        # No exec target: the program's objfiles have no text sections
        # listed (an attach without symbols); fall back on the objfiles.
        for obj in gdb.objfiles():
            if _local_path(obj.filename):
                mods.setdefault(_local_path(obj.filename), None)
    return exe, core, [(p, ".text", a) for p, a in mods.items()
                       if a is not None]


_CORE_SECTION_RE = re.compile(
    r"^\s*\[\d+\]\s+0x([0-9a-f]+)->0x([0-9a-f]+) at 0x[0-9a-f]+: "
    r"(load\S*) (.*)$")
_MAPPING_RE = re.compile(
    r"^\s*0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x[0-9a-f]+"
    r"\s+([r-][w-][x-][ps])\b")


def _regions(core_target):
    """[(start, end, writable)] of the process's memory: a core's load
    sections, or a process's mappings; [] if gdb cannot tell."""
    out = []
    try:
        if core_target:
            text = _gdb_text("maint info sections")
            block = False
            for line in text.splitlines():
                if line.startswith("Core file:"):
                    block = True
                elif line and not line[0].isspace():
                    block = False
                m = _CORE_SECTION_RE.match(line) if block else None
                if m:
                    out.append((int(m.group(1), 16), int(m.group(2), 16),
                                "READONLY" not in m.group(4).split()))
        else:
            text = _gdb_text("info proc mappings")
            for line in text.splitlines():
                m = _MAPPING_RE.match(line)
                if m:
                    out.append((int(m.group(1), 16), int(m.group(2), 16),
                                m.group(3)[1] == "w"))
    except gdb.error:
        return []
    return out


_REG_NAMES = ["rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
              "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip"]


def _frame_regs(frame, activation):
    fr = _FrameRegs()
    fr.pc = frame.pc()
    fr.activation = activation
    mask = 0
    for i, name in enumerate(_REG_NAMES):
        try:
            v = frame.read_register(name)
            if v.is_optimized_out:
                continue
            fr.regs[i] = int(v) & 0xffffffffffffffff
            mask |= 1 << i
        except (gdb.error, ValueError):
            continue
    fr.regmask = mask
    return fr


def _thread_frames(limit):
    """The selected thread's machine frames as gdb unwinds them: inline
    frames are left to libluacore, which expands them from the DWARF."""
    out = []
    frame = gdb.newest_frame()
    prev_sigtramp = False
    level = 0
    while frame is not None and len(out) < limit:
        if frame.type() != gdb.INLINE_FRAME:
            out.append(_frame_regs(frame, level == 0 or prev_sigtramp))
            prev_sigtramp = frame.type() == gdb.SIGTRAMP_FRAME
        level += 1
        try:
            frame = frame.older()
        except gdb.error:
            break
    return out


def _is_core():
    return "Local core dump file:" in _gdb_text("info target")


# SIGQUIT SIGILL SIGABRT SIGBUS SIGFPE SIGSEGV SIGXCPU SIGXFSZ SIGSYS
_FATAL = (3, 4, 6, 7, 8, 11, 24, 25, 31)


def _siginfo():
    """(signo, code, address) of the selected thread, or None."""
    try:
        si = gdb.parse_and_eval("$_siginfo")
        signo = int(si["si_signo"])
        code = int(si["si_code"])
        addr = 0
        if signo in (4, 7, 8, 11):   # SIGILL, SIGBUS, SIGFPE, SIGSEGV
            addr = int(si["_sifields"]["_sigfault"]["si_addr"])
        return signo, code, addr & 0xffffffffffffffff
    except (gdb.error, RuntimeError, ValueError):
        return None


def _need_target():
    if gdb.selected_inferior().pid == 0 and not _is_core():
        raise gdb.GdbError("luacore: no process or core file; run, "
                           "attach or open a core first")


class _Session:
    """One command's target: libluacore reading through gdb."""

    def __init__(self, threads=None, limit=512):
        lib = _library()
        _need_target()
        # Separate debug files where gdb looks for them: beside the
        # module and in its .debug, then gdb's debug-file-directory.
        lib.lc_set_debuginfo_path(
            (":.debug:" + str(gdb.parameter("debug-file-directory")))
            .encode())
        self.inferior = gdb.selected_inferior()
        self._read = _READ_FN(self._read_memory)
        self.t = ctypes.c_void_p()
        _check(lib.lc_target_create_callback(self._read, None,
                                             ctypes.byref(self.t)))
        # Every read is a Python call into gdb: read whole pages.
        lib.lc_target_set_caching(self.t, True)
        try:
            self._setup(lib, threads, limit)
        except Exception:
            lib.lc_target_destroy(self.t)
            raise

    def _read_memory(self, arg, addr, buf, n):
        try:
            data = self.inferior.read_memory(addr, n)
            ctypes.memmove(buf, bytes(data), n)
            return 0
        except Exception:
            return -1

    def _setup(self, lib, threads, limit):
        exe, core, mods = _info_files()
        for path, section, addr in mods:
            err = lib.lc_target_add_module_section(
                self.t, path.encode(), section.encode(), addr)
            if err:
                lib.lc_error_destroy(err)   # a module libdw cannot read
        _check(lib.lc_target_set_process(
            self.t, self.inferior.pid or 0,
            exe.encode() if exe else None, core.encode() if core else None))
        types, release = _layout
        if types or release:
            _check(lib.lc_target_set_layout(
                self.t, types.encode() if types else None,
                release.encode() if release else None))
        core_target = core is not None
        for start, end, writable in _regions(core_target):
            err = lib.lc_target_add_region(self.t, start, end, writable)
            if err:
                lib.lc_error_destroy(err)
        selected = gdb.selected_thread()
        frame = gdb.selected_frame() if selected else None
        all_threads = sorted(self.inferior.threads(), key=lambda t: t.num)
        if threads is None:
            threads = all_threads
        got = []
        try:
            for th in threads:
                th.switch()
                got.append((th, _siginfo(), _thread_frames(limit)))
        finally:
            if selected is not None and selected.is_valid():
                selected.switch()
                if frame is not None and frame.is_valid():
                    frame.select()
        # The crashed thread goes first: in a core, gdb's thread 1 (the
        # kernel writes the faulting thread first); in a live process,
        # the first that stopped with a fatal signal.  A breakpoint,
        # single step or ^C is not a crash.
        crashed = None
        for k, (th, si, _) in enumerate(got):
            if not si or not si[0]:
                continue
            if core_target and th.num == all_threads[0].num:
                crashed = k
                break
            if not core_target and si[0] in _FATAL:
                crashed = k
                break
        if crashed is not None:
            lib.lc_target_set_signal(self.t, *got[crashed][1])
            got.insert(0, got.pop(crashed))
        for th, si, frames in got:
            arr = (_FrameRegs * max(len(frames), 1))(*frames)
            try:
                name = th.name
            except UnicodeDecodeError:
                name = None     # not UTF-8: gdb cannot hand it over
            _check(lib.lc_target_add_thread(
                self.t, th.ptid[1] or th.ptid[0],
                name.encode() if name else None,
                si[0] if si else 0, arr, len(frames)))

    def report(self, **kw):
        opts = _ReportOptions()
        states = kw.pop("states", None)
        for k, v in kw.items():
            setattr(opts, k, v)
        if states:
            arr = (ctypes.c_uint64 * len(states))(*states)
            opts.states = arr
            opts.nstates = len(states)
        r = ctypes.POINTER(_Report)()
        _check(_lib.lc_report_create(self.t, ctypes.byref(opts),
                                     ctypes.byref(r)))
        return r

    def text(self, r, parts, state=0, state_frames=False):
        o = _TextOptions(parts, state, state_frames)
        return _capture(lambda f: _lib.lc_report_print_text_parts(
            r, ctypes.byref(o), f))

    def close(self):
        _lib.lc_target_destroy(self.t)
        self.t = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _write(text):
    gdb.write(text)
    if text and not text.endswith("\n"):
        gdb.write("\n")


def _u64(value):
    return int(value) & 0xffffffffffffffff


def _frame_L():
    """The selected frame's own L, if it has a readable one."""
    try:
        v = gdb.selected_frame().read_var("L")
    except (gdb.error, ValueError, RuntimeError):
        return 0
    if v.is_optimized_out:
        return 0
    try:
        return _u64(v)
    except gdb.error:
        return 0


def _parse_state(args):
    """The lua_State an argument names, else the selected frame's L, else
    the one whose Lua frames follow the selected frame in lua-bt."""
    if args:
        try:
            return _u64(gdb.parse_and_eval(args))
        except gdb.error as e:
            raise gdb.GdbError("luacore: cannot evaluate '%s': %s"
                               % (args, e))
    L = _frame_L()
    if L:
        return L
    th = gdb.selected_thread()
    if th is None:
        raise gdb.GdbError("luacore: no thread selected")
    frame = gdb.selected_frame()
    while frame.type() == gdb.INLINE_FRAME and frame.older() is not None:
        frame = frame.older()
    pc = frame.pc()
    try:
        sp = _u64(frame.read_register("rsp"))
    except gdb.error:
        sp = 0
    with _Session([th]) as s:
        r = s.report(no_vms=True)
        try:
            L = _state_at(r, pc, sp)
        finally:
            _lib.lc_report_destroy(r)
    if L:
        return L
    raise gdb.GdbError("luacore: no lua_State in the selected frame or "
                       "running on this thread; give one: lua-vm EXPR")


def _state_at(r, pc, sp):
    """The lua_State whose Lua frames follow the machine frame (pc, sp) in
    the report's one thread (those it runs or that called it); else the
    innermost state running on the thread."""
    if not r.contents.nthreads:
        return 0
    t = r.contents.threads[0]
    frames = [t.frames[i] for i in range(t.nframes)]
    for i, f in enumerate(frames):
        if (f.kind != LC_FRAME_NATIVE or f.inlined or f.pc != pc or
                (sp and f.sp and f.sp != sp)):
            continue
        for g in frames[i + 1:]:
            if g.kind == LC_FRAME_LUA and g.state:
                return g.state
        break
    return t.states[0] if t.nstates else 0


def _split(arg):
    return gdb.string_to_argv(arg) if arg else []

# ---- commands --------------------------------------------------------


class LuaBt(gdb.Command):
    """Mixed C+Lua backtrace.

Usage: lua-bt [-a] [-full] [THREAD...]

Shows the selected thread's native frames, as gdb unwinds them, with the
Lua frames each interpreter frame runs spliced in after it, and every Lua C
function after its native frame.  Lua frames read "lua: SOURCE:LINE: in
function 'NAME'", as Lua's own traceback words them.
  -a         every thread (as "thread apply all bt")
  -full      also the locals, varargs and upvalues of each Lua frame
  THREAD...  these gdb thread numbers"""

    def __init__(self):
        super().__init__("lua-bt", gdb.COMMAND_STACK)

    def complete(self, text, word):
        # gdb breaks words at '-': complete the whole last token, and
        # return what follows "word" in it.
        tok = text.split()[-1] if text and not text[-1].isspace() else ""
        word = word or ""
        if not tok.endswith(word):
            return []
        return [o[len(tok) - len(word):] for o in ("-a", "-full")
                if o.startswith(tok)]

    def invoke(self, arg, from_tty):
        _need_target()
        argv = _split(arg)
        full = "-full" in argv
        every = "-a" in argv or "all" in argv
        nums = [a for a in argv if a not in ("-a", "-full", "all")]
        inf = gdb.selected_inferior()
        if every:
            threads = None
        elif nums:
            by_num = {t.num: t for t in inf.threads()}
            threads = []
            for n in nums:
                if not n.isdigit() or int(n) not in by_num:
                    raise gdb.GdbError("luacore: no thread %s; see "
                                       "\"info threads\"" % n)
                threads.append(by_num[int(n)])
        else:
            th = gdb.selected_thread()
            if th is None:
                raise gdb.GdbError("luacore: no thread selected")
            threads = [th]
        with _Session(threads) as s:
            r = s.report(no_vms=True, no_scan=True, locals=full)
            try:
                _write(s.text(r, LC_TEXT_WARNINGS | LC_TEXT_THREADS))
            finally:
                _lib.lc_report_destroy(r)


class LuaStates(gdb.Command):
    """Every Lua VM and coroutine of the process.

Usage: lua-states [--vm-name GLOBAL]

For each VM (global_State): memory in use, the collector's state, its
allocator function, and with --vm-name its name: the string value of its
global GLOBAL (skynet's SERVICE_NAME); its resume chain; then each lua_State: main thread or coroutine, status
(running, normal, suspended, dead, idle, error), the OS thread running it
and who resumed it.  VMs idle on no thread are found, as luacore-inspect
finds them, by scanning the process's writable memory (the core's load
sections or the process's mappings, as gdb lists them)."""

    def __init__(self):
        super().__init__("lua-states", gdb.COMMAND_DATA, gdb.COMPLETE_NONE)

    def invoke(self, arg, from_tty):
        argv = gdb.string_to_argv(arg)
        name = None
        if len(argv) == 2 and argv[0] == "--vm-name" and argv[1]:
            name = argv[1].encode()
        elif argv:
            raise gdb.GdbError("luacore: usage: lua-states [--vm-name GLOBAL]")
        with _Session() as s:
            r = s.report(vm_name=name) if name else s.report()
            try:
                _write(s.text(r, LC_TEXT_WARNINGS | LC_TEXT_VMS))
            finally:
                _lib.lc_report_destroy(r)


def _state_report(L, stack=False, residue=16):
    with _Session() as s:
        r = s.report(no_scan=True, states=[L], stack=stack, residue=residue)
        try:
            text = s.text(r, LC_TEXT_WARNINGS | LC_TEXT_VMS, state=L,
                          state_frames=stack)
        finally:
            _lib.lc_report_destroy(r)
    if "lua_State 0x%x " % L not in text:
        raise gdb.GdbError("luacore: 0x%x is not a lua_State of this "
                           "process's Lua VM" % L)
    return text


# lua-layout's setting: (types file, release), for every command's target.
_layout = (None, None)


class LuaLayout(gdb.Command):
    """Where the Lua layout comes from.

Usage: lua-layout [FILE | X.Y.Z | default]

FILE: any ELF file with DWARF for lua_State (the program's own lstate.c
compiled with -g, a debug file, another build of the same sources), as
luacore-inspect --types; X.Y.Z: that release's built-in layout, as
--layout; default: the VM module's DWARF, else the built-in layout of the
release its lua_ident names.  Either way the layout is used only once it
validates against memory (lua-bt's header says so).  Without an
argument: the setting."""

    def __init__(self):
        super().__init__("lua-layout", gdb.COMMAND_DATA, gdb.COMPLETE_FILENAME)

    def invoke(self, arg, from_tty):
        global _layout
        a = arg.strip()
        if not a:
            types, release = _layout
            gdb.write("lua-layout: %s\n" % (
                "the DWARF of %s" % types if types else
                "the built-in layout of Lua %s" % release if release else
                "default (the module's DWARF, else the built-in layout of its release)"))
            return
        if a == "default":
            _layout = (None, None)
        elif re.match(r"^5\.\d+\.\d+$", a):
            _layout = (None, a)
        elif os.path.isfile(os.path.expanduser(a)):
            _layout = (os.path.abspath(os.path.expanduser(a)), None)
        else:
            raise gdb.GdbError("lua-layout: '%s' is neither a file nor a "
                               "release X.Y.Z (nor 'default')" % a)


class LuaVm(gdb.Command):
    """Internals of one lua_State and of its VM.

Usage: lua-vm [L]

L is any expression giving a lua_State *.  Without it: the selected
frame's variable L if gdb can read it, else the lua_State whose Lua
frames lua-bt shows next after the selected frame (an interpreter
frame's own, even where its L is <optimized out>), else the innermost one running on
the selected thread.  Shows the VM's memory, GC state, debt, estimate and parameters,
then the state's status, C calls and non-yieldable depth (nCcalls as
stored), errorJmp, hook, stack size, top, CallInfos and open upvalues."""

    def __init__(self):
        super().__init__("lua-vm", gdb.COMMAND_DATA, gdb.COMPLETE_EXPRESSION)

    def invoke(self, arg, from_tty):
        _need_target()
        _write(_state_report(_parse_state(arg.strip())))


class LuaStack(gdb.Command):
    """The data stack of a lua_State.

Usage: lua-stack [L] [-residue N]

Every slot from the stack's base to top, each with the Lua frame owning
it (lua#K as in the frame list) and "function" for a frame's function
slot; then up to N stale slots above top ("residue", default 16): values
already popped that the VM has not overwritten.  L as for lua-vm."""

    def __init__(self):
        super().__init__("lua-stack", gdb.COMMAND_DATA,
                         gdb.COMPLETE_EXPRESSION)

    def invoke(self, arg, from_tty):
        _need_target()
        argv = _split(arg)
        residue = 16
        if "-residue" in argv:
            i = argv.index("-residue")
            if i + 1 >= len(argv) or not argv[i + 1].isdigit():
                raise gdb.GdbError("luacore: -residue needs a number")
            residue = int(argv[i + 1])
            del argv[i:i + 2]
        _write(_state_report(_parse_state(" ".join(argv)), stack=True,
                             residue=residue))


_TVALUE_TYPES = ("TValue", "lua_TValue", "StackValue", "TValuefields")
_GC_TYPES = ("lua_State", "Table", "TString", "Closure", "LClosure",
             "CClosure", "Udata", "GCObject", "GCUnion", "GCheader",
             # LuaJIT's
             "GCtab", "GCstr", "GCfunc", "GCfuncL", "GCfuncC", "GCudata",
             "GCcdata", "GCobj", "GChead")


def _kind_of(value):
    """(kind, address) of a gdb.Value naming a Lua object."""
    t = value.type.strip_typedefs()
    if (value.type.name == "StkIdRel" or t.tag == "StkIdRel" or
            (t.code == gdb.TYPE_CODE_UNION and value.type.name == "StkIdRel")):
        # 5.4.5+: a union of the pointer and an offset; outside a stack
        # reallocation it holds the pointer.
        return LC_OBJECT_TVALUE, _u64(value["p"])
    if t.code == gdb.TYPE_CODE_PTR:
        target = t.target()
        name = target.name or target.strip_typedefs().tag or ""
        addr = _u64(value)
    elif value.address is not None:
        name = value.type.name or t.tag or ""
        addr = _u64(value.address)
    else:
        return None, _u64(value)
    # The typedef's own name first (StkId, TValue), then the struct tag.
    names = {name, target.strip_typedefs().tag if t.code ==
             gdb.TYPE_CODE_PTR else t.tag}
    if value.type.name == "StkId":
        return LC_OBJECT_TVALUE, addr
    if names & set(_TVALUE_TYPES):
        return LC_OBJECT_TVALUE, addr
    if names & set(_GC_TYPES):
        return LC_OBJECT_GC, addr
    return None, addr


class LuaValue(gdb.Command):
    """Decode one Lua value.

Usage: lua-value [-tvalue|-gc] [-n N] EXPR

EXPR is a TValue *, StkId, lua_State *, Table *, TString *, Closure *
(LClosure *, CClosure *) or Udata * (LuaJIT: TValue *, lua_State *,
GCtab *, GCstr *, GCfunc *, GCudata *), or an object of those types.  Shows
the value as Lua's tostring would, then: a table's entries (array part,
then hash part; at most N, default 100), a string's bytes, a Lua
closure's upvalues, a lua_State's internals as lua-vm shows them.  For an
integer or a void *, say what it points to: -tvalue or -gc (any GC
object, its header tells the type)."""

    def __init__(self):
        super().__init__("lua-value", gdb.COMMAND_DATA,
                         gdb.COMPLETE_EXPRESSION)

    def invoke(self, arg, from_tty):
        argv = _split(arg)
        kind = None
        limit = 100
        while argv and argv[0].startswith("-"):
            a = argv.pop(0)
            if a == "-tvalue":
                kind = LC_OBJECT_TVALUE
            elif a == "-gc":
                kind = LC_OBJECT_GC
            elif a == "-n" and argv and argv[0].isdigit():
                limit = int(argv.pop(0))
            elif a == "--":
                break
            else:
                raise gdb.GdbError("luacore: unknown option %s" % a)
        expr = " ".join(argv)
        if not expr:
            raise gdb.GdbError("luacore: lua-value needs an expression")
        try:
            value = gdb.parse_and_eval(expr)
        except gdb.error as e:
            raise gdb.GdbError("luacore: cannot evaluate '%s': %s"
                               % (expr, e))
        guessed, addr = _kind_of(value)
        if kind is None:
            kind = guessed
        if kind is None:
            raise gdb.GdbError(
                "luacore: '%s' is of type %s, not a Lua object; cast it or "
                "say -tvalue or -gc" % (expr, value.type))
        with _Session([]) as s:
            o = ctypes.c_void_p()
            _check(_lib.lc_object_create(s.t, kind, addr, limit,
                                         ctypes.byref(o)))
            try:
                text = _capture(lambda f: _lib.lc_object_print_text(o, f))
            finally:
                _lib.lc_object_destroy(o)
        _write(text)
        if text.startswith("thread: "):
            _write(_state_report(addr if kind == LC_OBJECT_GC else
                                 int(text.split()[1], 16)))


def _address(expr, what):
    """The address a gdb expression gives: a pointer's or an integer's
    value, an object's own address."""
    try:
        value = gdb.parse_and_eval(expr)
    except gdb.error as e:
        raise gdb.GdbError("luacore: cannot evaluate '%s': %s" % (expr, e))
    code = value.type.strip_typedefs().code
    try:
        if code in (gdb.TYPE_CODE_PTR, gdb.TYPE_CODE_INT,
                    gdb.TYPE_CODE_ENUM, gdb.TYPE_CODE_CHAR,
                    gdb.TYPE_CODE_BOOL):
            return _u64(value)
        if value.address is not None:
            return _u64(value.address)
    except gdb.error as e:
        raise gdb.GdbError("luacore: cannot evaluate '%s': %s" % (expr, e))
    raise gdb.GdbError("luacore: '%s' is of type %s, not %s"
                       % (expr, value.type, what))


def _heap_text(**kw):
    """lc_heap_create with these options (the rest zeroed) on a target
    over gdb's memory, and lc_heap_print_text's text."""
    opts = _HeapOptions()
    path_to = kw.pop("path_to", None)
    for k, v in kw.items():
        setattr(opts, k, v)
    if path_to:
        arr = (ctypes.c_uint64 * len(path_to))(*path_to)
        opts.path_to = arr
        opts.npath_to = len(path_to)
    # The heap's VMs are found by scanning memory, as lua-states finds
    # the idle ones: no thread's frames are needed.
    with _Session([]) as s:
        h = ctypes.c_void_p()
        _check(_lib.lc_heap_create(s.t, ctypes.byref(opts),
                                   ctypes.byref(h)))
        try:
            return _capture(lambda f: _lib.lc_heap_print_text(h, f))
        finally:
            _lib.lc_heap_destroy(h)


class LuaHeap(gdb.Command):
    """Census of the Lua heaps.

Usage: lua-heap [--top N] [--vm ADDR]

For each Lua VM of the process (found as lua-states finds them), as
luacore-inspect --heap prints it: the objects by type with the bytes the
VM's own free functions would free, against the VM's own count; strings
(the biggest, duplicated long strings), the biggest tables, functions by
definition, userdata by metatable, threads, prototypes.
  --top N     entries per list (default 20, at most 1000)
  --vm ADDR   only the VM whose global_State is at ADDR (an expression)"""

    def __init__(self):
        super().__init__("lua-heap", gdb.COMMAND_DATA, gdb.COMPLETE_NONE)

    def invoke(self, arg, from_tty):
        _need_target()
        argv = _split(arg)
        kw = {}
        while argv:
            a = argv.pop(0)
            if a == "--top" and argv:
                n = argv.pop(0)
                if not n.isdigit() or not 1 <= int(n) <= 1000:
                    raise gdb.GdbError("luacore: --top takes a number "
                                       "from 1 to 1000")
                kw["top"] = int(n)
            elif a == "--vm" and argv:
                kw["vm"] = _address(argv.pop(0), "a global_State")
            else:
                raise gdb.GdbError("luacore: usage: lua-heap [--top N] "
                                   "[--vm ADDR]")
        _write(_heap_text(**kw))


class LuaPath(gdb.Command):
    """Shortest path from the GC roots to one Lua object.

Usage: lua-path ADDR [--strong]

ADDR is an expression giving the address of a GC object (a table,
string, function, userdata, thread...).  Prints its VM's line, then
"path to ADDR (TYPE, BYTES): PATH" as luacore-inspect --heap --path ADDR
does: the steps as Lua reads them from a root (_G.x, _LOADED["m"].t[1],
-> upvalue 'u' of SOURCE:LINE, -> local 'v' in ..., -> metatable.__index),
marked when only a weak reference holds it, or "unreachable: garbage not
yet collected".  With --strong, weak references are not followed: an
object held by weak tables alone is unreachable.  An address where no
object of any VM starts says so."""

    def __init__(self):
        super().__init__("lua-path", gdb.COMMAND_DATA,
                         gdb.COMPLETE_EXPRESSION)

    def invoke(self, arg, from_tty):
        _need_target()
        argv = _split(arg)
        strong = "--strong" in argv
        argv = [a for a in argv if a != "--strong"]
        for a in argv:
            if a.startswith("--"):
                raise gdb.GdbError("luacore: unknown option %s" % a)
        expr = " ".join(argv)
        if not expr:
            raise gdb.GdbError("luacore: usage: lua-path ADDR [--strong]")
        addr = _address(expr, "an address")
        text = _heap_text(path_to=[addr], strong=strong)
        # Of the census, only the path: the header line of the VM that
        # holds it (or says why it is partial), that, then the library's
        # notes and "no object of any VM starts there".
        out = []
        for block in re.split(r"\n(?=VM 0x)", text.rstrip("\n")):
            lines = block.split("\n")
            kept = [l for l in lines if l.startswith("  path to 0x") or
                    l.startswith("  partial: ")]
            if lines[0].startswith("VM 0x") and kept:
                out += [lines[0]] + kept
            out += [l for l in lines if l.startswith("note: ") or
                    l.endswith(": no object of any VM starts there")]
        _write("\n".join(out) + "\n" if out else text)


def _register():
    LuaBt()
    LuaStates()
    LuaVm()
    LuaStack()
    LuaValue()
    LuaHeap()
    LuaPath()
    LuaLayout()


# Loading twice (gdb -x, then auto-load) registers the commands once.
if not getattr(gdb, "_luacore_loaded", False):
    gdb._luacore_loaded = True
    _register()
