# Test registration helpers (included by the top CMakeLists.txt).
#
# Every ctest carries exactly one area label — runtime, postprocess, frontend, codegen,
# driver or editor — plus "lit" for lit suites, "prof"/"tsan" for the profiler runtime's
# tests (the ThreadSanitizer build runs `-L tsan`) and "no-sanitizer" for the few that
# cannot run in a sanitizer build (`-LE no-sanitizer`). scripts/test.sh checks that no
# test lacks an area label.

# osprey_label_directory_tests(<label>): append <label> to every test registered so far
# in the calling directory (call it last in that CMakeLists.txt).
function(osprey_label_directory_tests label)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t ${tests})
    set_property(TEST ${t} APPEND PROPERTY LABELS ${label})
  endforeach()
endfunction()

# osprey_add_lit_suite(): the one way a lit suite becomes a ctest.
#
#   osprey_add_lit_suite(<ctest name>
#     SOURCE_DIR <dir with lit.cfg.py>       # the suite's own configuration
#     LABELS <label>...                      # ctest labels (see docs/ARCHITECTURE.md)
#     [TIMEOUT <seconds>]                    # default 600
#     [FILTER <regex>] [FILTER_OUT <regex>]  # lit --filter / --filter-out on test names
#     [PARAMS <key=value>...]                # lit --param (read as lit_config.params)
#     [EXTRA <python assignment>...])        # extra lines for the generated site config
#
# Every suite gets the same generated lit.site.cfg.py (test/lit.site.cfg.py.in): the
# driver, FileCheck, `not`, Python, the sanitizer setting and the build directory. Each
# call has its own exec directory, so suites that share a SOURCE_DIR (split by FILTER)
# never share temporaries. lit, FileCheck and `not` are checked at configure time: a
# missing tool is a configure error, never a silently skipped suite.

find_package(Python3 REQUIRED COMPONENTS Interpreter)

# osprey_find_lit_tools(): sets OSPREY_LIT and OSPREY_FILECHECK (needs LLVM found).
function(osprey_find_lit_tools)
  set(lit ${LLVM_TOOLS_BINARY_DIR}/../build/utils/lit/lit.py)
  foreach(tool lit FileCheck not)
    if(tool STREQUAL "lit")
      set(path ${lit})
    else()
      set(path ${LLVM_TOOLS_BINARY_DIR}/${tool})
    endif()
    if(NOT EXISTS ${path})
      message(FATAL_ERROR "${tool} not found at ${path}: install llvm-19-tools (scripts/setup.sh)")
    endif()
  endforeach()
  set(OSPREY_LIT ${lit} PARENT_SCOPE)
  set(OSPREY_FILECHECK ${LLVM_TOOLS_BINARY_DIR}/FileCheck PARENT_SCOPE)
endfunction()

function(osprey_add_lit_suite name)
  cmake_parse_arguments(PARSE_ARGV 1 S "" "SOURCE_DIR;TIMEOUT;FILTER;FILTER_OUT"
                        "LABELS;PARAMS;EXTRA")
  if(NOT S_SOURCE_DIR OR NOT EXISTS ${S_SOURCE_DIR}/lit.cfg.py)
    message(FATAL_ERROR "osprey_add_lit_suite(${name}): no lit.cfg.py in '${S_SOURCE_DIR}'")
  endif()
  if(NOT S_LABELS)
    message(FATAL_ERROR "osprey_add_lit_suite(${name}): LABELS are required")
  endif()
  if(NOT S_TIMEOUT)
    set(S_TIMEOUT 600)
  endif()
  set(exec_dir ${CMAKE_CURRENT_BINARY_DIR}/${name})
  set(OSPREY_LIT_SOURCE_DIR ${S_SOURCE_DIR})
  set(OSPREY_LIT_EXEC_DIR ${exec_dir})
  string(JOIN "\n" OSPREY_LIT_EXTRA ${S_EXTRA})
  configure_file(${PROJECT_SOURCE_DIR}/test/lit.site.cfg.py.in ${exec_dir}/lit.site.cfg.py.tmp
                 @ONLY)
  file(GENERATE OUTPUT ${exec_dir}/lit.site.cfg.py INPUT ${exec_dir}/lit.site.cfg.py.tmp)
  set(args -sv)
  if(S_FILTER)
    list(APPEND args --filter ${S_FILTER})
  endif()
  if(S_FILTER_OUT)
    list(APPEND args --filter-out ${S_FILTER_OUT})
  endif()
  foreach(p ${S_PARAMS})
    list(APPEND args --param ${p})
  endforeach()
  add_test(NAME ${name} COMMAND ${Python3_EXECUTABLE} ${OSPREY_LIT} ${args} ${exec_dir})
  set_tests_properties(${name} PROPERTIES LABELS "${S_LABELS}" TIMEOUT ${S_TIMEOUT})
endfunction()
