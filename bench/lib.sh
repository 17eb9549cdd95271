# Sourced by the benchmarks that take [BUILDDIR] [BUILD] (BUILD default
# deb-5.4): the build's directories, its hosts and tools, the sampler's
# scenarios, and the truth module every host loads.
builddir=$(cd "${1:-.}" && pwd)
build=${2:-deb-5.4}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$builddir/fixtures/out/$build
host=$out/lchost
sky=$out/skyhost
sample=$builddir/src/luacore-sample
scen=$here/fixtures/scenarios/sample
export LC_TRUTH_LUA=$here/fixtures/lua/truth.lua
