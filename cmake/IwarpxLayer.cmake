# iwarpx_layer(<name> [DEPS <targets>...])
#
# Declares one layer of the stack from the directory it is called in:
#   *.cc (not *_test.cc / *_fuzzer.cc) -> static library iwarpx_<name> (PIC),
#   *_test.cc                          -> one GoogleTest binary <name>_test, each
#                                         test case registered with ctest (label "unit"),
#   *_fuzzer.cc                        -> one libFuzzer binary fuzz_<stem> per file when
#                                         IWARPX_FUZZ is on, run by ctest for
#                                         IWARPX_FUZZ_SECONDS with the seeds in corpus/<stem>/.
# Headers are included as "<layer>/<file>.h" relative to prov/iwarpx/src.
function(iwarpx_layer name)
  cmake_parse_arguments(L "" "" "DEPS" ${ARGN})
  file(GLOB all_cc CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  set(srcs ${all_cc})
  list(FILTER srcs EXCLUDE REGEX "_(test|fuzzer)\\.cc$")
  set(tests ${all_cc})
  list(FILTER tests INCLUDE REGEX "_test\\.cc$")
  set(fuzzers ${all_cc})
  list(FILTER fuzzers INCLUDE REGEX "_fuzzer\\.cc$")

  set(lib iwarpx_${name})
  if(srcs)
    add_library(${lib} STATIC ${srcs})
    target_include_directories(${lib} PUBLIC ${IWARPX_SRC_DIR})
    target_link_libraries(${lib} PUBLIC ${L_DEPS} PRIVATE iwarpx_warnings)
  else()
    add_library(${lib} INTERFACE)
    target_include_directories(${lib} INTERFACE ${IWARPX_SRC_DIR})
    target_link_libraries(${lib} INTERFACE ${L_DEPS})
  endif()

  if(IWARPX_BUILD_TESTS AND tests)
    add_executable(${name}_test ${tests})
    target_link_libraries(${name}_test PRIVATE ${lib} iwarpx_testing GTest::gtest_main GTest::gmock
                          iwarpx_warnings)
    gtest_discover_tests(${name}_test DISCOVERY_TIMEOUT 60
                         PROPERTIES TIMEOUT 120 LABELS unit)
  endif()

  if(IWARPX_FUZZ)
    foreach(f ${fuzzers})
      get_filename_component(stem ${f} NAME_WE)
      string(REGEX REPLACE "_fuzzer$" "" stem ${stem})
      add_executable(fuzz_${stem} ${f})
      target_link_libraries(fuzz_${stem} PRIVATE ${lib} iwarpx_warnings)
      target_link_options(fuzz_${stem} PRIVATE -fsanitize=fuzzer)
      set(seeds ${CMAKE_CURRENT_SOURCE_DIR}/corpus/${stem})
      set(work ${CMAKE_CURRENT_BINARY_DIR}/corpus_work/${stem})
      add_test(NAME fuzz_${stem}
               COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1
                       ${IWARPX_SOURCE_ROOT}/scripts/run_fuzzer.sh $<TARGET_FILE:fuzz_${stem}>
                       ${IWARPX_FUZZ_SECONDS} ${work} ${seeds})
      set_tests_properties(fuzz_${stem} PROPERTIES LABELS fuzz
                           TIMEOUT ${IWARPX_FUZZ_TIMEOUT})
    endforeach()
  endif()
endfunction()
