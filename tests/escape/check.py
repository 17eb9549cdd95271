#!/usr/bin/env python3
"""The checks of tests/run-escape.sh on the outputs it left in DIR.

The expected escaped forms are written out here, and the program's own
traceback (DIR/truth, raw bytes) is escaped by esc() below, a second,
independent statement of the rule in doc/luacore-inspect.1 (ESCAPING):
every Lua frame of the truth must appear, so escaped, in the reports."""
import json
import re
import sys

d = sys.argv[1]
failed = False


def check(name, ok, detail=""):
    global failed
    print("%s %s%s" % ("PASS" if ok else "FAIL", name,
                       ": " + detail if detail and not ok else ""))
    failed |= not ok


def read(name):
    with open("%s/%s" % (d, name), "rb") as f:
        return f.read()


def esc(raw):
    """bytes -> the escaped text, C notation."""
    named = {0x5c: "\\\\", 0x07: "\\a", 0x08: "\\b", 0x09: "\\t",
             0x0a: "\\n", 0x0b: "\\v", 0x0c: "\\f", 0x0d: "\\r",
             0x1b: "\\e"}
    out, i = [], 0
    while i < len(raw):
        c = raw[i]
        if c in named:
            out.append(named[c])
            i += 1
            continue
        if 0x20 <= c < 0x7f:
            out.append(chr(c))
            i += 1
            continue
        k = 2 if 0xc2 <= c <= 0xdf else 3 if 0xe0 <= c <= 0xef else \
            4 if 0xf0 <= c <= 0xf4 else 0
        try:
            ch = raw[i:i + k].decode("utf-8") if k else ""
        except UnicodeDecodeError:
            ch = ""
        cp = ord(ch) if len(ch) == 1 else None
        if cp is not None and not (
                0x80 <= cp <= 0x9f or cp in (0x2028, 0x2029) or
                0x202a <= cp <= 0x202e or 0x2066 <= cp <= 0x2069):
            out.append(ch)
            i += k
        else:
            out.append("\\x%02x" % c)
            i += 1
    return "".join(out)


CHUNK = b"\x1b[2J\nfake  #0 0x0 in main () at x.c:1"
GNAME = b"g\x1b[31m\nfake\xff\xfex"
FNAME = b"f\x1b]0;t\x07\xc2\x9b"
COMM = b"\x1b[2J\n#1 0x0 in"
PARK = b"\x1b]8;;file:///etc\x07park.lua\x1b]8;;\x07"
LOCAL = b"\x1b[1m\n\xffL"
UPVAL = b"\x1b\n\xff_"
EXE = b"\x1b[31mlua\xc3\xa9"
E_CHUNK = r"\e[2J\nfake  #0 0x0 in main () at x.c:1"
E_G = r"g\e[31m\nfake\xff\xfex"
E_F = r"f\e]0;t\a\xc2\x9b"
E_COMM = r"\e[2J\n#1 0x0 in"
E_PARK = r"\e]8;;file:///etc\apark.lua\e]8;;\a"
E_LOCAL = r"\e[1m\n\xffL"
E_UPVAL = r"\e\n\xff_"
E_EXE = "\\e[31mlua\u00e9"
check("the test's oracle agrees with the forms written out",
      (esc(CHUNK), esc(GNAME), esc(FNAME), esc(COMM), esc(PARK),
       esc(LOCAL), esc(UPVAL), esc(EXE)) ==
      (E_CHUNK, E_G, E_F, E_COMM, E_PARK, E_LOCAL, E_UPVAL, E_EXE))
FORGED = re.compile(r"^(fake  #0 0x0 in main|#1 0x0 in)", re.M)


def clean(name, data):
    """Valid UTF-8, no control byte but newline and tab, no DEL, no C1
    control, no forged line.  Returns the text."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        check(name + ": valid UTF-8", False, str(e))
        text = data.decode("utf-8", "replace")
    else:
        check(name + ": valid UTF-8", True)
    bad = sorted({b for b in data if (b < 0x20 and b not in (9, 10)) or
                  b == 0x7f})
    check(name + ": no control byte but newline and tab",
          not bad, "bytes %s" % ", ".join("0x%02x" % b for b in bad))
    c1 = sorted({hex(ord(ch)) for ch in text if 0x80 <= ord(ch) <= 0x9f})
    check(name + ": no C1 control", not c1, ", ".join(c1))
    forged = FORGED.findall(text)
    check(name + ": no forged line", not forged, repr(forged))
    return text


def has(name, text, *subs):
    for s in subs:
        check("%s: shows %s" % (name, s), s in text)


# The program's own traceback: its Lua frames, escaped, with any line
# number (the truth is written a few lines before the parking point).
truth = read("truth")
frames = [t for t in truth.split(b"\n\t")[1:]
          if not t.startswith(b"[C]") and b"names.lua" not in t]
check("the truth has the four frames of the chunks", len(frames) == 4,
      repr(frames))


def truth_frames(name, text):
    for t in frames:
        e = esc(t.rstrip(b"\n"))
        m = list(re.finditer(r":\d+: in ", e))[-1]
        pat = re.escape(e[:m.start()]) + r":\d+: in " + re.escape(e[m.end():])
        check("%s: has the truth's frame %s" % (name, esc(t.rstrip(b"\n"))),
              re.search(r"     lua: " + pat + r"(\s|$)", text) is not None)


for rc in ("live", "json", "core", "gdb", "sample-folded", "sample-svg",
           "sample-speedscope"):
    got = read(rc + ".rc").decode().strip()
    check(rc + ": exit status 0", got == "0", got)

live = clean("inspect -p", read("live.out"))
clean("inspect -p stderr", read("live.err"))
truth_frames("inspect -p", live)
has("inspect -p", live, "lua: " + E_CHUNK + ":", "function '" + E_G + "'",
    "field '" + E_F + "'", " (" + E_COMM + ")\n",
    "lua: " + E_PARK + ":", "upvalue 'park'",
    "local " + E_LOCAL + " = \"", "upvalue " + E_UPVAL + " = table: ",
    "/" + E_EXE + "\n", " [" + E_EXE + "]\n",
    # A value is a Lua literal: \ddd, not \e or \xNN.
    'upvalue s = "g\\027[31m\\nfake\\255\\254x"')

core = clean("inspect CORE", read("core.out"))
clean("inspect CORE stderr", read("core.err"))
truth_frames("inspect CORE", core)
has("inspect CORE", core, " (" + E_COMM + ")\n",
    "in luaV_execute () at lvm.c:")
check("inspect CORE: the module named escaped",
      re.search(r"in luaV_execute \(\) at lvm\.c:\d+ \[" + re.escape(E_EXE) +
                r"\]\n", core) is not None)

out = read("gdb.out")
begin, end = out.find(b"@@BEGIN\n"), out.find(b"@@END\n")
check("gdb: ran both commands", 0 <= begin < end, out[-400:].decode(
    "utf-8", "replace"))
gdb = clean("gdb lua-bt -a, lua-states", out[begin:end])
truth_frames("gdb", gdb)
has("gdb", gdb, " [" + E_EXE + "]\n")

# JSON: its own escaping, of the raw bytes (one \u00XX per byte).
j = clean("inspect -p --json", read("json.out"))
rep = json.loads(j)
lua = [f for t in rep["threads"] for f in t["frames"] if f["kind"] == "lua"]


def raw(b):
    return b.decode("latin-1")


check("JSON: the raw chunk name", any(f["short_src"] == raw(CHUNK)
                                      for f in lua))
check("JSON: the raw global and field names",
      any(f["global_name"] == raw(GNAME) or f["name"] == raw(GNAME)
          for f in lua) and any(f["name"] == raw(FNAME) for f in lua))
check("JSON: the raw local and upvalue names",
      any(v["name"] == raw(LOCAL) and v["kind"] == "local"
          for f in lua for v in f.get("vars", [])) and
      any(v["name"] == raw(UPVAL) and v["kind"] == "upvalue"
          for f in lua for v in f.get("vars", [])))
check("JSON: the raw thread name",
      any(t["name"] == raw(COMM) for t in rep["threads"]))

folded = clean("folded", read("profile.folded"))
# ';' separates frames: a name's own ';' is ':'.
has("folded", folded, E_G + " (" + E_CHUNK + ":",
    E_F.replace(";", ":") + " (" + E_CHUNK + ":")
check("folded: one line per stack, frames as expected",
      all(re.fullmatch(r"[^;\n]+(;[^;\n]+)* \d+", l)
          for l in folded.splitlines()))

svg = clean("svg", read("profile.svg"))
has("svg", svg, E_G + " (" + E_CHUNK + ":", E_F + " (" + E_CHUNK + ":")

ss = clean("speedscope", read("profile.speedscope"))
doc = json.loads(ss)
names = [f["name"] for f in doc["shared"]["frames"]]
# The sampler reads each thread's state from /proc/.../stat, whose comm
# field holds the newline: a second's samples, not one.
check("speedscope: the escaped thread name",
      any(q["name"].endswith(" (" + E_COMM + ")") for q in doc["profiles"]),
      repr([q["name"] for q in doc["profiles"]]))
m = re.search(r"([\d,]+) samples taken", doc["name"])
taken = int(m.group(1).replace(",", "")) if m else 0
check("speedscope: a second of samples at 100 Hz (>= 50)", taken >= 50,
      doc["name"])
check("speedscope: the escaped names",
      any(n.startswith(E_G + " (" + E_CHUNK + ":") for n in names) and
      any(n.startswith(E_F + " (" + E_CHUNK + ":") for n in names),
      repr(names))
for f in ("folded", "svg", "speedscope"):
    clean("luacore-sample --format %s stderr" % f,
          read("sample-%s.err" % f))

sys.exit(1 if failed else 0)
