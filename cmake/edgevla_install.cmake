# `cmake --install` and the .deb (CPack): headers, libraries, the CLI, launch and params files,
# and the CMake package that find_package(edgevla) reads. Included last by the top-level
# CMakeLists.txt, when every target exists.
#
# Layout under the prefix:
#   bin/edgevla                      the CLI (RUNPATH $ORIGIN/../<libdir>)
#   <libdir>/libedgevla_*.so         runtime, model, backends, nodes, backend plugins (RUNPATH $ORIGIN)
#   <libdir>/edgevla/plugins/        node plugins found by type name (runtime/node/plugin_index.hpp)
#   include/edgevla/{runtime,msgs,nodes}/...   so "runtime/node/node.hpp" includes as in the tree
#   share/edgevla/{launch,params}/   the launch and params files
#   <libdir>/cmake/edgevla/          edgevlaConfig.cmake, its version file, targets, the plugin helper
include(CMakePackageConfigHelpers)

set(EDGEVLA_CMAKE_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/edgevla")
set(EDGEVLA_PLUGIN_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/edgevla/plugins")

# Installed binaries find their libraries relative to themselves, so the tree can move (a prefix
# chosen at install time, the .deb's /usr).
file(RELATIVE_PATH edgevla_bin_to_lib "${CMAKE_INSTALL_FULL_BINDIR}" "${CMAKE_INSTALL_FULL_LIBDIR}")
set(edgevla_installed_libraries edgevla_runtime edgevla_model edgevla_backends edgevla_backend_cpu
                                edgevla_nodes_shared)
set_target_properties(${edgevla_installed_libraries} PROPERTIES INSTALL_RPATH "$ORIGIN")
set_target_properties(edgevla PROPERTIES INSTALL_RPATH "$ORIGIN/${edgevla_bin_to_lib}")
set_target_properties(edgevla_runtime PROPERTIES EXPORT_NAME runtime)
set_target_properties(edgevla_model PROPERTIES EXPORT_NAME model)
set_target_properties(edgevla_backends PROPERTIES EXPORT_NAME backends)
set_target_properties(edgevla_backend_cpu PROPERTIES EXPORT_NAME backend_cpu)
set_target_properties(edgevla PROPERTIES EXPORT_NAME edgevla)

install(TARGETS ${edgevla_installed_libraries} edgevla
        EXPORT edgevlaTargets
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
if(EDGEVLA_CUDA)
  # A run-time plugin (loaded by name beside libedgevla_backends.so); nothing links it. It also
  # keeps the toolkit's library folder (libcudart, libcublasLt) when that is not a system one.
  set_target_properties(edgevla_backend_cuda PROPERTIES INSTALL_RPATH "$ORIGIN" INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS edgevla_backend_cuda LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}")
endif()

# Headers: everything a node (or a program hosting nodes) includes; each compiles with the
# installed ones alone (tests/install). The CLI's own headers and the cuda backend's (CUDA
# toolkit headers) are not part of the interface.
install(DIRECTORY runtime/ DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/edgevla/runtime"
        FILES_MATCHING PATTERN "*.hpp" PATTERN "cli" EXCLUDE PATTERN "cuda" EXCLUDE)
install(DIRECTORY msgs/ DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/edgevla/msgs" FILES_MATCHING PATTERN "*.hpp")
install(DIRECTORY nodes/ DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/edgevla/nodes" FILES_MATCHING PATTERN "*.hpp")

install(DIRECTORY launch params DESTINATION "${CMAKE_INSTALL_DATADIR}/edgevla")
# The installed package's own node plugin folder exists even while empty, so the CLI's "folders
# searched" list names a real place to install into.
install(DIRECTORY DESTINATION "${EDGEVLA_PLUGIN_INSTALL_DIR}")

install(EXPORT edgevlaTargets NAMESPACE edgevla:: DESTINATION "${EDGEVLA_CMAKE_INSTALL_DIR}")
configure_package_config_file(cmake/edgevlaConfig.cmake.in "${PROJECT_BINARY_DIR}/edgevlaConfig.cmake"
                              INSTALL_DESTINATION "${EDGEVLA_CMAKE_INSTALL_DIR}"
                              PATH_VARS EDGEVLA_PLUGIN_INSTALL_DIR CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_DATADIR)
# 0.x: a minor version may change the interface.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/edgevlaConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/edgevlaConfig.cmake" "${PROJECT_BINARY_DIR}/edgevlaConfigVersion.cmake"
              cmake/edgevla_node_plugin.cmake
        DESTINATION "${EDGEVLA_CMAKE_INSTALL_DIR}")

# The .deb: `cpack -G DEB` in the build folder. Its dependencies are what dpkg-shlibdeps finds
# the binaries linking (libzmq5, libyaml-cpp0.7, libopenblas0, ...), read from the local
# package database (no network).
set(CPACK_PACKAGE_NAME edgevla)
set(CPACK_PACKAGE_VENDOR edgevla)
set(CPACK_PACKAGE_CONTACT "edgevla maintainers <edgevla@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Vision-Language-Action policies as a graph of nodes over a pub/sub bus")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Building against the installed package also needs the headers its own headers include and the
# CMake packages its config finds; running the CLI does not.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "cmake, g++, cppzmq-dev, libzmq3-dev, libyaml-cpp-dev, libspdlog-dev, libfmt-dev")
include(CPack)
