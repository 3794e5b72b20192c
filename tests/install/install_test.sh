#!/usr/bin/env bash
# The installed package, used as someone outside this repository would use it.
#
#   install_test.sh custom_node <build dir> <source dir> <cmake>
#     `cmake --install` of the build into a prefix; docs/examples/custom_node copied out of the
#     source tree, configured against that prefix alone (CMAKE_PREFIX_PATH), built and installed
#     into a second prefix; the installed `edgevla launch` runs the example's launch file, whose
#     my_gripper node is found by name on EDGEVLA_PLUGIN_PATH, and the recording shows its output.
#   install_test.sh deb <build dir> <source dir> <cpack>
#     `cpack -G DEB`, the package's files and dependencies, and its CLI run from the unpacked tree.
#
# Everything is made under <build dir>/tests/install/<mode> and removed at exit, with the graph's
# registry folder.
set -euo pipefail
mode=$1 build=$2 src=$3 tool=$4
work="$build/tests/install/$mode"
domain="install-$mode-$$"
registry="${XDG_RUNTIME_DIR:-/tmp}/edgevla-$(id -u)/$domain"
cleanup() { rm -rf "$work" "$registry"; }
trap cleanup EXIT
rm -rf "$work"
mkdir -p "$work"

fail() {
  echo "install_test $mode: $*" >&2
  exit 1
}
# Runs a command with its output in a log under $work; shows the log and fails if it fails.
step() {
  local name=$1
  shift
  if ! "$@" >"$work/$name.log" 2>&1; then
    cat "$work/$name.log" >&2
    fail "$name failed: $*"
  fi
}
# The message count of `topic` in `edgevla bag info` output.
topic_count() {
  sed -nE "s|^ +$2 +[A-Za-z]+ v[0-9]+ +([0-9]+) msgs.*|\1|p" <<<"$1"
}

custom_node() {
  local cmake=$tool prefix="$work/edgevla" example="$work/example"
  step install "$cmake" --install "$build" --prefix "$prefix"
  local exe="$prefix/bin/edgevla"
  [[ -x "$exe" ]] || fail "the install put no edgevla CLI at $exe"
  # The CLI resolves each of edgevla's libraries (runtime, model, backends, backend_cpu, nodes)
  # from the prefix, not from the build tree.
  local libs
  libs=$(env -u LD_LIBRARY_PATH ldd "$exe" | grep -F libedgevla_) || fail "ldd lists no edgevla library for $exe"
  [[ $(wc -l <<<"$libs") -ge 5 ]] || fail "installed edgevla links fewer edgevla libraries than expected: $libs"
  if grep -vF "=> $prefix/" <<<"$libs"; then fail "installed edgevla loads the libraries above from outside $prefix"; fi

  # Every installed header compiles with the installed ones alone (and what the system provides).
  (cd "$prefix/include/edgevla" && find . -name '*.hpp' | sort | sed -E 's|^\./(.*)|#include "\1"|') >"$work/all_headers.cpp"
  [[ $(wc -l <"$work/all_headers.cpp") -gt 50 ]] || fail "the install has only $(wc -l <"$work/all_headers.cpp") headers"
  step headers "${CXX:-c++}" -std=c++20 -fsyntax-only -I"$prefix/include/edgevla" "$work/all_headers.cpp"

  # The example, outside the source tree, sees edgevla through the installed package only.
  cp -r "$src/docs/examples/custom_node" "$work/custom_node"
  step configure "$cmake" -S "$work/custom_node" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
  local found
  found=$(sed -nE 's|^edgevla_DIR:PATH=(.*)|\1|p' "$work/build/CMakeCache.txt")
  [[ "$found" == "$prefix/"* ]] || fail "the example found edgevla at '$found', not in $prefix"
  if grep -qE -e "-I$src( |\")" -e "$src/(runtime|msgs|nodes)" "$work/build/compile_commands.json"; then
    fail "the example's compile commands name edgevla's source tree: $(cat "$work/build/compile_commands.json")"
  fi
  step build "$cmake" --build "$work/build" -j 1
  step install_example "$cmake" --install "$work/build" --prefix "$example"
  local index plugins launch="$example/share/custom_node/launch/gripper_demo.yaml"
  index=$(find "$example" -name my_gripper_plugin.nodes)
  [[ -n "$index" ]] || fail "the example's install has no my_gripper_plugin.nodes index"
  plugins=$(dirname "$index")
  [[ -f "$plugins/libmy_gripper_plugin.so" ]] || fail "no libmy_gripper_plugin.so beside $index"

  local -a run=(env -u LD_LIBRARY_PATH -u EDGEVLA_PLUGIN_PATH EDGEVLA_DOMAIN="$domain")
  # Without the plugin folder the type is unknown, and the error says where it looked.
  local code=0
  "${run[@]}" "$exe" launch --check "$launch" >"$work/unknown.log" 2>&1 || code=$?
  [[ $code -eq 2 ]] || { cat "$work/unknown.log" >&2; fail "launch --check without the plugin exited $code, not 2"; }
  for part in my_gripper "$(realpath "$prefix")/lib" EDGEVLA_PLUGIN_PATH; do
    grep -qF -- "$part" "$work/unknown.log" || { cat "$work/unknown.log" >&2; fail "the unknown-type error does not name '$part'"; }
  done

  # On EDGEVLA_PLUGIN_PATH: `node types` lists it with its library, the graph runs, and my_gripper's commands are in the recording.
  local types
  types=$("${run[@]}" EDGEVLA_PLUGIN_PATH="$plugins" "$exe" node types) || fail "node types failed"
  grep -qE "^my_gripper +plugin $plugins/libmy_gripper_plugin\.so " <<<"$types" ||
    fail "node types does not list my_gripper from $plugins: $types"
  step launch "${run[@]}" EDGEVLA_PLUGIN_PATH="$work/nothere:$plugins" GRIPPER_BAG="$work/gripper.mcap" \
    "$exe" launch "$launch" --duration 3
  local info chunks commands
  info=$("$exe" bag info "$work/gripper.mcap") || fail "bag info failed on the recording"
  chunks=$(topic_count "$info" /example/chunks)
  commands=$(topic_count "$info" /example/gripper)
  [[ -n "$chunks" && -n "$commands" ]] || fail "the recording lacks /example/chunks or /example/gripper: $info"
  # About 10 chunks a second for 3 s; one command per chunk the gripper took.
  ((commands >= 5 && commands <= chunks)) || fail "$commands gripper commands for $chunks chunks: $info"
  grep -qF "gripper (my_gripper)" <<<"$info" || fail "the recording does not list node gripper (my_gripper): $info"

  # A program of one's own linking edgevla::nodes has the built-in node types without naming any
  # symbol of libedgevla_nodes.so (the linker would drop it otherwise); and the version check.
  mkdir -p "$work/host"
  cat >"$work/host/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(host LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
# The version file: another major refused, the installed version itself accepted.
find_package(edgevla 99.0 QUIET)
if(edgevla_FOUND)
  message(FATAL_ERROR "find_package(edgevla 99.0) accepted edgevla ${edgevla_VERSION}")
endif()
find_package(edgevla REQUIRED)
find_package(edgevla ${edgevla_VERSION} EXACT REQUIRED)
add_executable(host host.cpp)
target_link_libraries(host PRIVATE edgevla::nodes)
CMAKE
  cat >"$work/host/host.cpp" <<'CPP'
#include <runtime/node/node_registry.hpp>
int main() { return edgevla::NodeRegistry::instance().contains("tensor_source") ? 0 : 3; }
CPP
  step host_configure "$cmake" -S "$work/host" -B "$work/host/build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  step host_build "$cmake" --build "$work/host/build"
  step host_run env -u LD_LIBRARY_PATH "$work/host/build/host"

  # From the example's build tree, before any install of it.
  step check_build_tree "${run[@]}" EDGEVLA_PLUGIN_PATH="$work/build/edgevla/plugins" "$exe" launch --check "$launch"

  # Installed into edgevla's own prefix, the type is found with no EDGEVLA_PLUGIN_PATH.
  step install_example_beside "$cmake" --install "$work/build" --prefix "$prefix"
  [[ -n $(find "$prefix" -path '*/edgevla/plugins/my_gripper_plugin.nodes') ]] ||
    fail "installed into $prefix, the example's index is not in its edgevla/plugins folder"
  step check_own_folder "${run[@]}" "$exe" launch --check "$launch"
  echo "install_test custom_node: ok ($commands gripper commands for $chunks chunks)"
}

deb() {
  local cpack=$tool
  step cpack "$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$work"
  local pkg
  pkg=$(find "$work" -maxdepth 1 -name 'edgevla_*.deb')
  [[ -n "$pkg" ]] || fail "cpack made no edgevla_*.deb in $work: $(cat "$work/cpack.log")"
  local files depends
  files=$(dpkg-deb -c "$pkg")
  for f in ./usr/bin/edgevla /libedgevla_runtime.so /libedgevla_nodes.so /libedgevla_backend_cpu.so \
           /cmake/edgevla/edgevlaConfig.cmake /cmake/edgevla/edgevlaConfigVersion.cmake \
           /cmake/edgevla/edgevla_node_plugin.cmake /include/edgevla/runtime/node/node_registry.hpp \
           /share/edgevla/launch/demo_inprocess.yaml /share/edgevla/params/demo.yaml /edgevla/plugins/; do
    grep -qF -- "$f" <<<"$files" || fail "$pkg does not hold $f: $files"
  done
  depends=$(dpkg-deb -f "$pkg" Depends)
  local names
  names=$(sed -E 's/ \([^)]*\)//g; s/, /\n/g' <<<"$depends")
  for d in libzmq5 libyaml-cpp0.7 libopenblas0 libstdc++6; do
    grep -qxF -- "$d" <<<"$names" || fail "$pkg does not depend on $d: Depends: $depends"
  done
  # Unpacked anywhere, its CLI runs on its own libraries and has the built-in nodes.
  dpkg-deb -x "$pkg" "$work/root"
  local types
  types=$(env -u LD_LIBRARY_PATH EDGEVLA_DOMAIN="$domain" "$work/root/usr/bin/edgevla" node types) ||
    fail "the packaged CLI does not run from the unpacked tree"
  grep -qE "^ *tensor_source" <<<"$types" || fail "the packaged CLI lists no tensor_source node type: $types"
  echo "install_test deb: ok ($(wc -l <<<"$files") entries; Depends: $depends)"
}

case "$mode" in
  custom_node) custom_node ;;
  deb) deb ;;
  *) fail "unknown mode '$mode' (custom_node or deb)" ;;
esac
