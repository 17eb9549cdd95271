# gdb -batch -nx -ex 'py DUMP="FILE"' -x tests/luajit/gdb_layout.py ELF
# Holds each line of lj-layout's dump (FILE) against gdb's own reading of
# ELF's DWARF: a field's offset and size, a type's size, an enumerator's
# value; a field the dump calls absent (offset -1) must be unknown to gdb
# too.  Prints one line per disagreement and "layout: N checked, M differ".
import gdb

ENUMS = {
    "vmst_interp": "LJ_VMST_INTERP", "vmst_c": "LJ_VMST_C",
    "vmst_gc": "LJ_VMST_GC", "vmst_exit": "LJ_VMST_EXIT",
    "vmst_record": "LJ_VMST_RECORD", "vmst_opt": "LJ_VMST_OPT",
    "vmst_asm": "LJ_VMST_ASM", "vmst_max": "LJ_VMST__MAX",
    "frame_lua": "FRAME_LUA", "frame_c": "FRAME_C",
    "frame_cont": "FRAME_CONT", "frame_varg": "FRAME_VARG",
    "frame_luap": "FRAME_LUAP", "frame_cp": "FRAME_CP",
    "frame_pcall": "FRAME_PCALL", "frame_pcallh": "FRAME_PCALLH",
    "gcroot_mmname": "GCROOT_MMNAME", "gcroot_max": "GCROOT_MAX",
    "bc_mov": "BC_MOV", "bc_gget": "BC_GGET", "bc_tgets": "BC_TGETS",
    "bc_uget": "BC_UGET", "bc_knil": "BC_KNIL", "bc_iterc": "BC_ITERC",
    "bc_max": "BC__MAX", "bcm_dst": "BCMdst", "bcm_base": "BCMbase",
    "mm_call": "MM_call", "mm_max": "MM__MAX", "varname_max": "VARNAME__MAX",
    "trace_idle": "LJ_TRACE_IDLE", "trace_active": "LJ_TRACE_ACTIVE",
    "trace_record": "LJ_TRACE_RECORD", "trace_start": "LJ_TRACE_START",
    "trace_asm": "LJ_TRACE_ASM", "trace_err": "LJ_TRACE_ERR",
    "ir_kgc": "IR_KGC", "ir_knum": "IR_KNUM",
}


def ev(expr):
    try:
        return int(gdb.parse_and_eval(expr))
    except gdb.error:
        return None


checked = bad = 0
for line in open(DUMP):  # noqa: F821 (set by -ex)
    parts = line.split()
    if len(parts) != 3 and not (len(parts) == 2 and "." in parts[0]):
        continue
    name = parts[0]
    kind, _, rest = name.partition(".")
    if kind in ("module", "desc", "fork", "gc64"):
        continue
    checked += 1
    if kind == "sizeof":
        got, want = ev("sizeof(%s)" % rest), int(parts[1])
        if got != want:
            bad += 1
            print("DIFF %s: luacore %d, gdb %s" % (name, want, got))
    elif kind == "enum":
        got, want = ev("(long)%s" % ENUMS[rest]), int(parts[1])
        if got != want and not (want == -1 and got is None):
            bad += 1
            print("DIFF %s (%s): luacore %d, gdb %s" % (name, ENUMS[rest], want, got))
    else:
        off, size = int(parts[1]), int(parts[2])
        goff = ev("(long)&((%s *)0)->%s" % (kind, rest))
        gsize = ev("sizeof(((%s *)0)->%s)" % (kind, rest))
        if off < 0:
            if goff is not None:
                bad += 1
                print("DIFF %s: luacore: absent, gdb: offset %d" % (name, goff))
        elif (goff, gsize) != (off, size):
            bad += 1
            print("DIFF %s: luacore %d/%d, gdb %s/%s" % (name, off, size, goff, gsize))
print("layout: %d checked, %d differ" % (checked, bad))
