# edgevla_add_node_plugin(<target> TYPES <type>... SOURCES <file>...
#                         [LIBRARIES <lib>...] [DESTINATION <folder>])
#
# Builds a node plugin: a shared module linking edgevla::runtime whose sources register the
# node types named in TYPES with EDGEVLA_REGISTER_NODE, and its index file <target>.nodes
# (`library: lib<target>.so`, `types: [...]`), which is how `edgevla launch` finds the library
# from a launch file's `type: <type>` (runtime/node/plugin_index.hpp).
#
# Built, both sit in ${CMAKE_BINARY_DIR}/edgevla/plugins (put that folder on EDGEVLA_PLUGIN_PATH
# to run from the build tree). Installed, both go to DESTINATION, by default
# ${EDGEVLA_PLUGIN_INSTALL_DIR} (lib/edgevla/plugins, as edgevla itself was installed) under the
# install prefix: the folder edgevla searches by itself when that prefix is edgevla's own;
# otherwise add it to EDGEVLA_PLUGIN_PATH.
include_guard(GLOBAL)

function(edgevla_add_node_plugin target)
  cmake_parse_arguments(P "" "DESTINATION" "TYPES;SOURCES;LIBRARIES" ${ARGN})
  if(P_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "edgevla_add_node_plugin(${target}): unknown arguments '${P_UNPARSED_ARGUMENTS}' "
                        "(it takes TYPES, SOURCES, LIBRARIES and DESTINATION)")
  endif()
  if(NOT P_SOURCES)
    message(FATAL_ERROR "edgevla_add_node_plugin(${target}): no SOURCES; name the files that define the node types")
  endif()
  if(NOT P_TYPES)
    message(FATAL_ERROR "edgevla_add_node_plugin(${target}): no TYPES; name the node types the sources register "
                        "with EDGEVLA_REGISTER_NODE (launch files use them as `type:`)")
  endif()
  foreach(type IN LISTS P_TYPES)
    if(NOT type MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
      message(FATAL_ERROR "edgevla_add_node_plugin(${target}): node type '${type}' is not a valid name; "
                          "use letters, digits and '_', not starting with a digit (e.g. my_gripper)")
    endif()
  endforeach()
  if(NOT P_DESTINATION)
    set(P_DESTINATION "${EDGEVLA_PLUGIN_INSTALL_DIR}")
  endif()

  set(folder "${CMAKE_BINARY_DIR}/edgevla/plugins")
  add_library(${target} MODULE ${P_SOURCES})
  target_link_libraries(${target} PRIVATE edgevla::runtime ${P_LIBRARIES})
  # A symbol the plugin uses but does not link fails here, not when `edgevla launch` loads it.
  target_link_options(${target} PRIVATE "LINKER:--no-undefined")
  set_target_properties(${target} PROPERTIES
    LIBRARY_OUTPUT_DIRECTORY "${folder}"
    INSTALL_RPATH "${EDGEVLA_LIBRARY_DIR}")

  string(REPLACE ";" ", " type_list "${P_TYPES}")
  set(index "${folder}/${target}.nodes")
  file(GENERATE OUTPUT "${index}"
       CONTENT "# edgevla node plugin index (edgevla_add_node_plugin)\nlibrary: $<TARGET_FILE_NAME:${target}>\ntypes: [${type_list}]\n")
  install(TARGETS ${target} LIBRARY DESTINATION "${P_DESTINATION}")
  install(FILES "${index}" DESTINATION "${P_DESTINATION}")
endfunction()
