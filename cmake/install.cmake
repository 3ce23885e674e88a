# `cmake --install`: the header, libckjit.so* and libckjit.a, the CMake package (ckjit::ckjit,
# ckjit::ckjit_static) and ckjit.pc. Nothing else of the project is installed.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set_target_properties(ckjit_shared PROPERTIES EXPORT_NAME ckjit)
install(TARGETS ckjit_shared ckjit_static EXPORT ckjitTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/ckjit.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(CKJIT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ckjit)
install(EXPORT ckjitTargets NAMESPACE ckjit:: DESTINATION ${CKJIT_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/ckjitConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ckjitConfig.cmake INSTALL_DESTINATION ${CKJIT_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ckjitConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)  # 0.x: each minor version may break the API
install(FILES ${PROJECT_BINARY_DIR}/ckjitConfig.cmake ${PROJECT_BINARY_DIR}/ckjitConfigVersion.cmake
        DESTINATION ${CKJIT_CMAKE_DIR})

# ckjit.pc finds its prefix from its own place (${pcfiledir}), so `cmake --install --prefix P`
# gives a working file whatever the prefix was at configure time.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(CKJIT_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH rel "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" rel "${rel}")
  set(CKJIT_PC_PREFIX "\${pcfiledir}/${rel}")
endif()
foreach(d LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${d}}")
    set(CKJIT_PC_${d} "${CMAKE_INSTALL_${d}}")
  else()
    set(CKJIT_PC_${d} "\${prefix}/${CMAKE_INSTALL_${d}}")
  endif()
endforeach()
list(TRANSFORM CKJIT_SYSTEM_LIBS PREPEND "-l" OUTPUT_VARIABLE pc_libs)
list(APPEND pc_libs -lpthread)
list(JOIN pc_libs " " CKJIT_PC_LIBS_PRIVATE)
configure_file(${CMAKE_CURRENT_LIST_DIR}/ckjit.pc.in ${PROJECT_BINARY_DIR}/ckjit.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ckjit.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
