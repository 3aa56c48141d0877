# Sourced by test.sh, fuzz.sh and run.sh: when ccache is installed (by
# install-deps.sh), sets the ccache environment and `ccache_args`, the CMake
# options that put it in front of the compilers; both empty otherwise.
# Paths below the checkout are hashed relative to it, and the build
# directory is left out of the hash of -g compiles (ccache's hash_dir, on by
# default, made every clone's sanitizer and fuzz builds miss; the cost is
# that a cached object's debug info names the directory it was first built
# in), so rebuilds stay cheap across clones too.
ccache_args=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
  ccache_args=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
