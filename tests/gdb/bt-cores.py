# Sourced by gdb (tests/gdb/check-core.sh), after gdb/luaprof.py: "lua-bt -a"
# on each cell of the file named by $LUACORE_BT_CELLS (one cell directory a
# line, each with exe and core), in this one gdb session: the executable is
# loaded again only when it changes, each core is opened with core-file.
# Writes CELL/gdb-bt.txt (the command's output) and CELL/gdb-bt.err (the
# error it raised, if any).
import os

import gdb

gdb.execute("set confirm off")
gdb.execute("set pagination off")
gdb.execute("set width 0")
current = None
with open(os.environ["LUACORE_BT_CELLS"]) as f:
    cells = [line.strip() for line in f if line.strip()]
for cell in cells:
    text, err = "", ""
    try:
        exe = os.path.realpath(os.path.join(cell, "exe"))
        if exe != current:
            current = None
            gdb.execute("file " + exe, to_string=True)
            current = exe
        gdb.execute("core-file " + os.path.join(cell, "core"), to_string=True)
        text = gdb.execute("lua-bt -a", to_string=True)
    except gdb.error as e:
        err = str(e)
        if not err.startswith("luacore: "):
            err = "Python Exception or gdb error: " + err
    with open(os.path.join(cell, "gdb-bt.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(cell, "gdb-bt.err"), "w") as f:
        f.write(err + "\n" if err else "")
