# Cross toolchain for AArch64 Linux (Debian 12: g++-aarch64-linux-gnu, the :arm64 libraries through
# multiarch, libcpuinfo's arm64 files unpacked into .deps/arm64-sysroot since its -dev package is
# not co-installable). Tests run under qemu-aarch64 (CMAKE_CROSSCOMPILING_EMULATOR; QEMU_CPU picks
# the emulated CPU). Used by `bash tools/dev.sh test-arm64`.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
get_filename_component(CKJIT_ARM64_SYSROOT "${CMAKE_CURRENT_LIST_DIR}/../.deps/arm64-sysroot" ABSOLUTE)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig:${CKJIT_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig")
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu ${CKJIT_ARM64_SYSROOT})
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-L${CKJIT_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu -Wl,-rpath,${CKJIT_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
