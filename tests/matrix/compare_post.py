#!/usr/bin/env python3
"""Compare luacore-inspect --json --locals --stack with a post_* cell's truth.

    compare_post.py [-q] [--no-frames] TRUTH.tsv REPORT.json

The truth's post lines (fixtures/README.md, "Post checks") against the
report's vms[] (doc/json.md, format luacore-inspect/1):

  coroutine   vms[].threads[] has the address, with the status; a coroutine
              that died by an error is "dead" to coroutine.status and
              "error" to luacore, and only "error" is accepted for it
  coroutines  the VM (by its main thread) has exactly N threads[]
  chain       vms[].chain, main thread first, equals the truth's list
  varframe    the thread's frames[LEVEL] is that Lua frame (what, source,
  var         currentline), and its vars[] are the truth's: per kind
              (local, vararg, upvalue) in order, name (not for varargs),
              value.type, and value.text (booleans; numbers, compared as
              numbers), value.string (strings) or value.address (GC
              objects).  Report locals named "(...)" (temporaries) are
              ignored, as the truth leaves them out; on 5.1 so are report
              varargs (Lua 5.1 cannot list them).
  nny         threads[].nny == 0 if yieldable, > 0 if not
  errorjmp    threads[].errorjmp null or not
  residue     each value is in a slot of the thread with residue == true
  gc          the VM's gc.state is not "pause" (5.4, 5.5: gc.kind is
              "incremental"), and memory is within GC_TOLERANCE bytes of
              count * 1024 (count was taken just before park_gc, which then
              wrote the truth: that allocates ~4.7 KB)
  gcbytes     the VM's memory equals the bytes exactly (taken by lchost
              after the truth was written, with nothing allocated since)
  vm          vms[] has a VM with that main thread, found_by as given
  vmcount     len(vms) == N
  frame       as compare.py does (unless --no-frames)

Prints a section per check kind ("=" same, "!" differs); -q prints only the
differing lines and the summaries.  Exit status: 0 all match, 1 mismatch,
2 unreadable input.
"""
import json
import struct
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (frames: the same check as the 98-cell matrix)

# Bytes TRUTH_WRITE may allocate between the count and the capture: measured
# 4.3-4.7 KB on every build (gcbytes - count * 1024); 16 KiB leaves room for
# longer paths and other truths without hiding a wrong field (the heap is
# ~900 KB).
GC_TOLERANCE = 16 * 1024

KINDS = {"luaversion": 2, "frame": 9, "coroutine": 5, "coroutines": 3,
         "chain": 2, "varframe": 7, "var": 8, "nny": 5, "errorjmp": 4,
         "residue": 4, "gc": 4, "gcbytes": 3, "vm": 4, "vmcount": 2,
         "tb": 4, "coframe": 9, "cotb": 4}


def unescape(s):
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            out.append({"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}.get(s[i + 1], s[i:i + 2]))
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def addr(s):
    """"0x..." -> int; None, "" and "(nil)" -> None."""
    if s is None or s in ("", "(nil)"):
        return None
    return int(s, 16)


def read_truth(path):
    """-> {kind: [columns after the kind, ...]}; lines as bytes read latin-1,
    so a string value's bytes are the code points 0-255 (as in the JSON)."""
    lines = {}
    with open(path, "rb") as f:
        data = f.read().decode("latin-1")
    for n, line in enumerate(data.split("\n"), 1):
        if not line:
            continue
        cols = line.split("\t")
        if KINDS.get(cols[0]) != len(cols):
            raise ValueError("%s:%d: not a truth line: %r" % (path, n, line[:120]))
        lines.setdefault(cols[0], []).append(cols[1:])
    return lines


class Report:
    def __init__(self, doc):
        self.doc = doc
        self.vms = doc.get("vms") or []
        self.thread = {}    # lua_State address -> (vm, thread entry)
        self.vm_by_main = {}
        for vm in self.vms:
            self.vm_by_main[addr(vm.get("mainthread"))] = vm
            for th in vm.get("threads") or []:
                self.thread[addr(th.get("address"))] = (vm, th)

    def frames_of(self, a, th):
        """The Lua frames of lua_State a, innermost first: its vms[] entry's,
        or if those carry no vars[], the OS threads' frames with state a."""
        frames = th.get("frames") or []
        if any("vars" in fr for fr in frames):
            return frames
        os_frames = [fr for t in self.doc.get("threads") or [] for fr in t.get("frames") or []
                     if fr.get("kind") == "lua" and addr(fr.get("state")) == a]
        return os_frames if any("vars" in fr for fr in os_frames) else frames


class Section:
    def __init__(self, title):
        self.title, self.rows = title, []

    def add(self, ok, text, *more):
        self.rows.append((ok, ["  %s %s" % ("=" if ok else "!", text)] +
                          ["        " + m for m in more]))

    def ok(self):
        return all(ok for ok, _ in self.rows)

    def show(self, quiet):
        bad = sum(1 for ok, _ in self.rows if not ok)
        print("%s: %s (%d checked%s)" % (self.title, "match" if not bad else "MISMATCH",
                                          len(self.rows), ", %d differ" % bad if bad else ""))
        for ok, lines in self.rows:
            if not (quiet and ok):
                print("\n".join(lines))


def lookup(rep, sec, a, what):
    """The (vm, thread) of address a, or None after noting its absence."""
    got = rep.thread.get(addr(a))
    if got is None:
        sec.add(False, "%s %s: not in any vms[].threads[]" % (what, a))
    return got


# ---- values --------------------------------------------------------------

def show_value(v):
    if not isinstance(v, dict):
        return repr(v)
    if v.get("string") is not None:
        return repr(v["string"][:60])
    return str(v.get("text") or v.get("address") or v.get("type"))


def same_value(ttype, tval, rv):
    """Truth (type, value column) against a report value -> (ok, why)."""
    if not isinstance(rv, dict):
        return False, "no value"
    if rv.get("type") != ttype:
        return False, "type %s, report %s" % (ttype, rv.get("type"))
    if ttype == "nil":
        return True, ""
    if ttype == "boolean":
        return rv.get("text") == tval, "text %r, report %r" % (tval, rv.get("text"))
    if ttype == "number":
        try:
            t, r = float(tval), float(rv.get("text"))
        except (TypeError, ValueError):
            return False, "number %s, report text %r" % (tval, rv.get("text"))
        # Exact, or as close as a 14-digit display (Lua's own %.14g)
        # allows; a 4-byte float (LUA_32BITS) in its 9 digits.
        f32 = struct.unpack("f", struct.pack("f", t))[0] == t
        return (t == r or abs(t - r) <= 1e-13 * abs(t) or
                (f32 and r == float("%.9g" % t))), "number %s, report %s" % (tval, rv.get("text"))
    if ttype == "string":
        want = unescape(tval)[:4096]
        got = rv.get("string")
        if got is None:
            return False, "string %r, report has no value.string (text %r)" % (want[:60], rv.get("text"))
        return got == want, "string %r, report %r" % (want[:60], got[:60])
    # LuaJIT's fast functions: tostring gives "function: builtin#N",
    # no address; so does the report's text.
    if ttype == "function" and tval.startswith("function: builtin#"):
        return rv.get("text") == tval, "%s, report %s" % (tval, rv.get("text"))
    # GC objects: the address tostring shows.  For full userdata that is
    # lua_topointer, the block after the Udata header; luacore may give
    # either the object or the block.
    t, r = addr(tval), addr(rv.get("address"))
    ok = r is not None and (t == r or (ttype == "userdata" and 0 < t - r <= 64))
    return ok, "%s %s, report address %s" % (ttype, tval, rv.get("address"))


# ---- checks ----------------------------------------------------------------

def check_coroutines(truth, rep):
    sec = Section("coroutine statuses")
    for a, status, ended, label in truth.get("coroutine", []):
        got = lookup(rep, sec, a, label)
        if not got:
            continue
        # coroutine.status says "dead" either way; luacore tells an error.
        want = "error" if status == "dead" and ended == "error" else status
        have = got[1].get("status")
        note = " (coroutine.status: dead, by an error)" if want != status else ""
        sec.add(have == want, "%-7s %s %s%s" % (label, a, want, note) if have == want else
                "%-7s %s truth %s%s, report %s" % (label, a, want, note, have))
    for main, n in truth.get("coroutines", []):
        vm = rep.vm_by_main.get(addr(main))
        if vm is None:
            sec.add(False, "VM of main thread %s: not in vms[]" % main)
            continue
        ths = vm.get("threads") or []
        known = {addr(c[0]) for c in truth.get("coroutine", [])}
        extra = [t.get("address") for t in ths if addr(t.get("address")) not in known]
        sec.add(len(ths) == int(n), "VM %s: %d lua_States%s" % (main, len(ths), "" if len(ths) == int(n)
                else ", truth %s; not in the truth: %s" % (n, " ".join(map(str, extra)) or "-")))
    return sec


def check_chain(truth, rep):
    sec = Section("resume chain")
    for (chain,) in truth.get("chain", []):
        want = chain.split(",")
        vm = rep.vm_by_main.get(addr(want[0]))
        if vm is None:
            sec.add(False, "VM of main thread %s: not in vms[]" % want[0])
            continue
        have = vm.get("chain") or []
        sec.add([addr(x) for x in want] == [addr(x) for x in have],
                "truth  " + " -> ".join(want), "report " + " -> ".join(map(str, have)))
    return sec


def frame_id(fr):
    return (fr.get("what"), fr.get("source"), fr.get("currentline"))


def check_vars(truth, rep, version):
    sec = Section("locals and upvalues")
    byframe = {}
    for a, level, kind, index, name, ttype, tval in truth.get("var", []):
        byframe.setdefault((addr(a), int(level)), []).append((kind, int(index), unescape(name), ttype, tval))
    for a, level, what, source, cur, nvars in truth.get("varframe", []):
        level, tid = int(level), (what, unescape(source), int(cur))
        where = "%s frame %d (%s %s:%s)" % (a, level, what, source.rsplit("/", 1)[-1], cur)
        got = lookup(rep, sec, a, "thread")
        if not got:
            continue
        frames = rep.frames_of(addr(a), got[1])
        fr = frames[level] if level < len(frames) else None
        if fr is None or frame_id(fr) != tid:
            # Say so, but compare the vars of the frame that matches, if any.
            alt = [i for i, f in enumerate(frames) if frame_id(f) == tid]
            sec.add(False, "%s: report frames[%d] is %s; the frame is at %s" % (
                where, level, frame_id(fr) if fr else "missing", alt or "no index"))
            if not alt:
                continue
            fr = frames[alt[0]]
        if "vars" not in fr:
            sec.add(False, "%s: no vars[] in the report (--locals?)" % where)
            continue
        tvars = sorted(byframe.get((addr(a), level), []), key=lambda v: (v[0], v[1]))
        for kind in ("local", "vararg", "upvalue"):
            tk = [v for v in tvars if v[0] == kind]
            rk = [v for v in fr["vars"] if v.get("kind") == kind]
            if kind == "local":
                rk = [v for v in rk if not str(v.get("name", "")).startswith("(")]
            if kind == "vararg" and version == "5.1":
                continue
            for i in range(max(len(tk), len(rk))):
                t = tk[i] if i < len(tk) else None
                r = rk[i] if i < len(rk) else None
                label = "%s %s #%d" % (where, kind, i + 1)
                if t is None:
                    sec.add(False, "%s: report only: %s = %s" % (label, r.get("name"), show_value(r.get("value"))))
                elif r is None:
                    sec.add(False, "%s: truth only: %s = %s %s" % (label, t[2], t[3], t[4]))
                else:
                    ok, why = same_value(t[3], t[4], r.get("value"))
                    name_ok = kind == "vararg" or r.get("name") == t[2]
                    text = "%s: %s = %s" % (label, t[2], show_value(r.get("value")))
                    if ok and name_ok:
                        sec.add(True, text)
                    else:
                        sec.add(False, text, *([why] if not ok else []) +
                                ([] if name_ok else ["name %r, report %r" % (t[2], r.get("name"))]))
    return sec


def check_nny(truth, rep):
    sec = Section("nny (yieldable)")
    for a, y, source, label in truth.get("nny", []):
        got = lookup(rep, sec, a, label)
        if not got:
            continue
        nny = got[1].get("nny")
        ok = isinstance(nny, int) and ((nny == 0) if y == "1" else (nny > 0))
        sec.add(ok, "%s %s: %s (%s) -> nny %s; report nny %s" % (
            label, a, "yieldable" if y == "1" else "not yieldable", source,
            "== 0" if y == "1" else "> 0", nny))
    return sec


def check_errorjmp(truth, rep):
    sec = Section("errorJmp")
    for a, want, why in truth.get("errorjmp", []):
        got = lookup(rep, sec, a, why)
        if not got:
            continue
        have = got[1].get("errorjmp")
        have_set = addr(have) not in (None, 0)
        sec.add(have_set == (want == "set"), "%s (%s): truth %s, report %s" % (a, why, want, have))
    return sec


def check_residue(truth, rep):
    sec = Section("stale slots")
    bythread = {}
    for a, ttype, tval in truth.get("residue", []):
        bythread.setdefault(a, []).append((ttype, tval))
    for a, values in bythread.items():
        got = lookup(rep, sec, a, "thread")
        if not got:
            continue
        slots = got[1].get("slots")
        if slots is None:
            sec.add(False, "%s: no slots[] in the report (--stack?)" % a)
            continue
        stale = [s for s in slots if s.get("residue")]
        for ttype, tval in values:
            hit = next((s for s in stale if same_value(ttype, tval, s.get("value"))[0]), None)
            shown = repr(unescape(tval)) if ttype == "string" else tval
            if hit is not None:
                stale.remove(hit)
                sec.add(True, "%s %s %s: slot %s" % (a, ttype, shown, hit.get("index")))
            else:
                sec.add(False, "%s %s %s: in no residue slot (%d residue slots, of %d)" % (
                    a, ttype, shown, sum(1 for s in slots if s.get("residue")), len(slots)))
    return sec


def check_gc(truth, rep, version):
    sec = Section("gc")
    for a, count, steps in truth.get("gc", []):
        got = lookup(rep, sec, a, "thread")
        if not got:
            continue
        vm = got[0]
        gc = vm.get("gc") or {}
        mem, kb = vm.get("memory"), float(count)
        diff = None if mem is None else mem - kb * 1024
        sec.add(diff is not None and abs(diff) <= GC_TOLERANCE,
                "memory %s = %.3f KB; count before park %s KB (%s bytes apart, tolerance %d)" % (
                    mem, (mem or 0) / 1024, count, "?" if diff is None else "%+d" % diff, GC_TOLERANCE))
        sec.add(gc.get("state") not in (None, "pause"),
                "gc.state %s (state_code %s): %s steps into a cycle, not pause" % (
                    gc.get("state"), gc.get("state_code"), steps))
        if version in ("5.4", "5.5"):
            sec.add(gc.get("kind") == "incremental", "gc.kind %s, truth incremental" % gc.get("kind"))
    for a, nbytes in truth.get("gcbytes", []):
        got = lookup(rep, sec, a, "thread")
        if got:
            mem = got[0].get("memory")
            sec.add(mem == int(nbytes), "memory %s, truth exactly %s bytes at the capture" % (mem, nbytes))
    return sec


def check_vms(truth, rep):
    sec = Section("VMs")
    for (n,) in truth.get("vmcount", []):
        scanned = sum(1 for vm in rep.vms if vm.get("found_by") == "scan")
        sec.add(len(rep.vms) == int(n), "%d vms (%d found by scan), truth %s" % (len(rep.vms), scanned, n))
    for a, found_by, label in truth.get("vm", []):
        vm = rep.vm_by_main.get(addr(a))
        if vm is None:
            sec.add(False, "%s main thread %s: no VM with it" % (label, a))
        else:
            sec.add(vm.get("found_by") == found_by, "%s main thread %s: found_by %s%s" % (
                label, a, vm.get("found_by"), "" if vm.get("found_by") == found_by else ", truth " + found_by))
    return sec


def check_frames(truth, rep):
    """compare.py's frame check, on the truth's frame lines."""
    sec = Section("frames")
    with tempfile.NamedTemporaryFile("w", encoding="latin-1", suffix=".tsv") as tmp:
        for kind in ("luaversion", "frame", "tb"):
            for cols in truth.get(kind, []):
                tmp.write("\t".join([kind] + cols) + "\n")
        tmp.flush()
        _, frames = compare.read_truth(tmp.name)
    threads = {t.get("tid"): t for t in rep.doc.get("threads") or []}
    for tid in sorted(frames):
        th = threads.get(tid)
        if th is None:
            sec.add(False, "thread %d: not in the report" % tid)
            continue
        got = [compare.from_report(fr) for fr in th.get("frames", []) if fr.get("kind") == "lua"]
        for same, lines in compare.diff_thread(frames[tid], got):
            sec.rows.append((same, ["  [%d]" % tid + lines[0][1:]] + lines[1:]))
    return sec


def main(argv):
    quiet, frames = "-q" in argv, "--no-frames" not in argv
    args = [a for a in argv if a not in ("-q", "--no-frames")]
    if len(args) != 2:
        print("usage: " + __doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        truth = read_truth(args[0])
        with open(args[1], encoding="utf-8") as f:
            rep = Report(json.load(f))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        print("compare_post: %s" % e, file=sys.stderr)
        return 2
    version = (truth.get("luaversion") or [[""]])[0][0].replace("Lua ", "")
    if rep.doc.get("format") != "luacore-inspect/1":
        print("compare_post: format %r, not luacore-inspect/1" % rep.doc.get("format"))
    sections = [check_coroutines(truth, rep), check_chain(truth, rep),
                check_vars(truth, rep, version), check_nny(truth, rep),
                check_errorjmp(truth, rep), check_residue(truth, rep),
                check_gc(truth, rep, version), check_vms(truth, rep)]
    if frames:
        sections.append(check_frames(truth, rep))
    ok = True
    for sec in sections:
        if sec.rows:
            sec.show(quiet)
            ok = ok and sec.ok()
    if not any(sec.rows for sec in sections):
        print("compare_post: %s has no post lines" % args[0], file=sys.stderr)
        return 2
    print("compare_post: %s" % ("match" if ok else "MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
